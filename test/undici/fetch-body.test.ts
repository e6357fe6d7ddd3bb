/**
 * `createAgent` under undici's fetch and Node's global fetch, which hand a
 * dispatcher every request body as a one-shot async iterable: a body of a
 * stated length up to `bodyReplayLimit` is kept and sent again.
 */
import { fetch as undiciFetch } from 'undici';
import { describe, expect, it } from 'vitest';
import type { GiveUpEvent } from '../../src/events.js';
import { constantBackoff } from '../../src/retry/backoff.js';
import { createAgent } from '../../src/undici/index.js';
import { KeptBody } from '../../src/undici/kept-body.js';
import { httpServer, type TestServer } from '../helpers/server.js';
import { closeAfterEach } from './support.js';

const open = closeAfterEach();
const fast = { attempts: 3, backoff: constantBackoff(0) };

async function serve(handler: Parameters<typeof httpServer>[0]): Promise<TestServer> {
  return open.add(await httpServer(handler));
}

/** 503 on the first request, then 200 with the body it received. */
const busyOnce = (
  _req: unknown,
  res: import('node:http').ServerResponse,
  i: number,
  body: Buffer,
) => (i === 0 ? res.writeHead(503).end('busy') : res.end(`got ${body.toString()}`));

describe('a one-shot fetch body through createAgent', () => {
  it("undici's fetch: a PUT with a string body is sent again after a 503, the same bytes", async () => {
    const server = await serve(busyOnce);
    const agent = open.add(createAgent({ retry: fast }));
    const res = await undiciFetch(server.url, {
      method: 'PUT',
      body: 'payload',
      dispatcher: agent,
    });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('got payload');
    expect(server.received.map((r) => r.body.toString())).toEqual(['payload', 'payload']);
  });

  it("Node's global fetch: a keyed POST is sent again after a reset, with its key and body", async () => {
    const server = await serve((req, res, i, body) => {
      if (i === 0) req.socket.destroy();
      else res.end(`got ${body.toString()}`);
    });
    const agent = open.add(createAgent({ retry: fast }));
    const init = {
      method: 'POST',
      body: JSON.stringify({ n: 1 }),
      headers: { 'idempotency-key': 'order-42' },
      dispatcher: agent,
    };
    // Node's RequestInit types `dispatcher` as its bundled undici's; the agent is undici 7's.
    const res = await fetch(server.url, init as unknown as RequestInit);
    expect(await res.text()).toBe('got {"n":1}');
    expect(server.received).toHaveLength(2);
    for (const r of server.received) {
      expect(r.body.toString()).toBe('{"n":1}');
      expect(r.headers['idempotency-key']).toBe('order-42');
    }
  });

  it('a body over bodyReplayLimit is sent once: the 503 comes back, said as body-not-replayable', async () => {
    const server = await serve(busyOnce);
    const giveUps: GiveUpEvent[] = [];
    const agent = open.add(
      createAgent({ retry: fast, bodyReplayLimit: 4, on: { giveUp: (e) => giveUps.push(e) } }),
    );
    const res = await undiciFetch(server.url, {
      method: 'PUT',
      body: 'payload',
      dispatcher: agent,
    });
    expect(res.status).toBe(503);
    await res.text();
    expect(server.received).toHaveLength(1);
    expect(giveUps.map((e) => e.reason)).toEqual(['body-not-replayable']);
  });

  it('bodyReplayLimit is checked at construction, naming the option and the value', () => {
    expect(() => createAgent({ bodyReplayLimit: -1 })).toThrow(RangeError);
    expect(() => createAgent({ bodyReplayLimit: -1 })).toThrow(/bodyReplayLimit.*-1/);
    expect(() => createAgent({ bodyReplayLimit: '1mb' as never })).toThrow(TypeError);
    expect(() => createAgent({ bodyReplayLimit: '1mb' as never })).toThrow(/bodyReplayLimit/);
  });
});

describe('KeptBody', () => {
  it('an attempt that stopped mid-body leaves what it read kept; the next sends it all, the source read once', async () => {
    let reads = 0;
    async function* source() {
      for (const chunk of ['a', 'b', 'c']) {
        reads++;
        yield chunk;
      }
    }
    const kept = new KeptBody(source());
    const first: unknown[] = [];
    for await (const chunk of kept) {
      first.push(chunk);
      if (first.length === 2) break;
    }
    expect(first).toEqual(['a', 'b']);
    const second: unknown[] = [];
    for await (const chunk of kept) second.push(chunk);
    expect(second).toEqual(['a', 'b', 'c']);
    const third: unknown[] = [];
    for await (const chunk of kept) third.push(chunk);
    expect(third).toEqual(['a', 'b', 'c']);
    expect(reads).toBe(3);
  });
});
