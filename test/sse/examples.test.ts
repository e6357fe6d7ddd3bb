/**
 * examples/sse-relay, started and exercised: the Hono and Fastify relays in
 * front of the demo upstream (whose first answer is an overloaded_error
 * event). A client reads the relayed stream whole (the overload was retried
 * before it saw anything), and a client that leaves early makes the upstream
 * see its socket close. The examples import `staunch` and `staunch/sse`,
 * which resolve here to the sources.
 */
import { request } from 'node:http';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createApp as fastifyApp } from '../../examples/sse-relay/fastify.mjs';
import { createApp as honoApp, listen } from '../../examples/sse-relay/hono.mjs';
import { startUpstream } from '../../examples/sse-relay/upstream.mjs';
import { until } from '../helpers/clock.js';

vi.mock('staunch', () => import('../../src/index.js'));
vi.mock('staunch/sse', () => import('../../src/sse/index.js'));

type Upstream = Awaited<ReturnType<typeof startUpstream>>;
const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

interface Relay {
  url: string;
}

async function hono(upstream: Upstream): Promise<Relay> {
  const server = await listen(honoApp({ upstream: upstream.url }));
  closers.push(server.close);
  return server;
}

async function fastify(upstream: Upstream): Promise<Relay> {
  const app = fastifyApp({ upstream: upstream.url });
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  closers.push(() => app.close());
  return { url };
}

async function up(options: Parameters<typeof startUpstream>[0]): Promise<Upstream> {
  const upstream = await startUpstream(options);
  closers.push(upstream.close);
  return upstream;
}

/** POSTs to the relay, reads until `stopAfter` bytes arrived or the end, then leaves. */
function chat(url: string, stopAfter = Number.POSITIVE_INFINITY): Promise<string> {
  return new Promise((resolve, reject) => {
    let body = '';
    const req = request(
      `${url}/chat`,
      { method: 'POST', headers: { 'content-type': 'application/json' } },
      (res) => {
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
          if (body.length >= stopAfter) {
            req.destroy();
            resolve(body);
          }
        });
        res.on('end', () => resolve(body));
      },
    );
    req.on('error', (e) => (body.length >= stopAfter ? undefined : reject(e)));
    req.end('{"prompt":"hi"}');
  });
}

describe.each([
  ['hono', hono],
  ['fastify', fastify],
])('examples/sse-relay/%s.mjs', (_name, start) => {
  it('relays the whole stream; the overloaded first event was retried upstream', async () => {
    const upstream = await up({ tokens: 3, interval: 1 });
    const relay = await start(upstream);
    const body = await chat(relay.url);
    expect(body).toContain('event: message_start\n');
    expect(body.match(/event: content_block_delta/g)).toHaveLength(3);
    expect(body).toContain('event: message_stop\n');
    expect(body).not.toContain('overloaded_error');
    expect(upstream.stats.requests).toBe(2);
  });

  it('a client that leaves makes the upstream see its socket close, and say so', async () => {
    // 1000 tokens an hour apart: the upstream is silent after message_start.
    const lines: string[] = [];
    const upstream = await up({
      tokens: 1000,
      interval: 3_600_000,
      overloadFirst: false,
      log: (line) => lines.push(line),
    });
    const relay = await start(upstream);
    const first = await chat(relay.url, 1);
    expect(first.length).toBeGreaterThan(0);
    await until(() => upstream.stats.requests === 1 && upstream.stats.closed === 1);
    expect(upstream.stats.open).toBe(0);
    expect(lines).toEqual([
      'upstream: request 1 closed after 0 of 1000 tokens: the client left, and the relay aborted it',
    ]);
  });

  it('a stream read to its end is not reported as closed early', async () => {
    const lines: string[] = [];
    const upstream = await up({ tokens: 2, interval: 1, log: (line) => lines.push(line) });
    const relay = await start(upstream);
    expect(await chat(relay.url)).toContain('event: message_stop\n');
    expect(lines).toEqual([]);
  });
});
