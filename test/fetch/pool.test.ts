/**
 * Failure bodies are released before the next attempt, so a pool of one
 * connection never starves (npm undici's fetch on an Agent with one connection).
 */
import { Agent, fetch as undiciFetch } from 'undici';
import { expect, test } from 'vitest';
import { client } from '../helpers/harness.js';
import { httpServer, type TestServer } from '../helpers/server.js';
import { closeAfterEach } from '../helpers/teardown.js';

let server: TestServer;
let agent: Agent;
const open = closeAfterEach();

function onePool() {
  agent = new Agent({ connections: 1, pipelining: 1 });
  open.add(agent);
  const transport = ((input: string, init: RequestInit) =>
    undiciFetch(input, { ...(init as object), dispatcher: agent })) as unknown as typeof fetch;
  const c = client({ retry: 4 }, { transport });
  open.defer(c.stop);
  return c.fetch;
}

/** The first attempt of each path fails with a body of `size` bytes; the second succeeds. */
async function failingWith(size: number, chunked = false) {
  const big = Buffer.alloc(size, 120);
  const seen = new Set<string>();
  server = await httpServer((req, res) => {
    if (!seen.has(req.url!)) {
      seen.add(req.url!);
      res.writeHead(503, chunked ? {} : { 'content-length': String(big.length) });
      res.end(big);
    } else {
      res.end('ok');
    }
  });
  open.add(server);
}

test.each([
  ['256 KB with content-length', 256 * 1024, false],
  ['256 KB chunked', 256 * 1024, true],
  ['1 KB', 1024, false],
])('failure bodies of %s do not starve a one-connection pool', async (_name, size, chunked) => {
  await failingWith(size, chunked);
  const fetch = onePool();
  const results = await Promise.all(
    Array.from({ length: 8 }, async (_, i) => {
      const res = await fetch(`${server.url}/r/${i}`);
      return `${res.status} ${await res.text()}`;
    }),
  );
  expect(results).toEqual(Array(8).fill('200 ok'));
  expect(server.received).toHaveLength(16);
});
