/**
 * Issue 10, item 3: wrappers that forward their own options. ofetch passes
 * its whole options object (its `retry`, a count of retries, and its
 * `timeout`) to the fetch it wraps; ky passes the options it does not know.
 * staunch reads only `init.staunch` (and the `idempotencyKey` shorthand), so
 * each layer's options mean what its own docs say.
 */
import ky, { HTTPError } from 'ky';
import { createFetch as createOfetch, FetchError } from 'ofetch';
import { describe, expect, test } from 'vitest';
import { createFetch, type StaunchFetch } from '../../src/index.js';
import { httpServer, type TestServer } from '../helpers/server.js';
import { closeAfterEach } from '../helpers/teardown.js';

let server: TestServer;
const open = closeAfterEach();

async function failing(): Promise<TestServer> {
  server = await httpServer((_req, res) => {
    res.writeHead(500, { 'content-type': 'application/json' });
    res.end('{"error":"boom"}');
  });
  open.add(server);
  return server;
}

/** A staunch fetch (3 attempts, no backoff wait) that records the init each attempt got. */
function staunch(): { fetch: StaunchFetch; inits: RequestInit[] } {
  const inits: RequestInit[] = [];
  const fetch = createFetch({
    random: () => 0,
    fetch: (url, init) => {
      inits.push(init);
      return globalThis.fetch(url, init);
    },
  });
  return { fetch, inits };
}

describe('ofetch wrapping staunch', () => {
  test('ofetch’s defaults: its 1 retry of a GET times staunch’s 3 attempts, and the real 500 comes out', async () => {
    const s = await failing();
    const { fetch } = staunch();
    const $fetch = createOfetch({ fetch: fetch as typeof globalThis.fetch });
    const err = await $fetch(s.url).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FetchError);
    expect(err).toMatchObject({ status: 500, data: { error: 'boom' } });
    expect(s.received).toHaveLength(6);
  });

  test('retry: 0 leaves only staunch retrying; ofetch’s keys reach the transport untouched', async () => {
    const s = await failing();
    const { fetch, inits } = staunch();
    const $fetch = createOfetch({ fetch: fetch as typeof globalThis.fetch });
    const err = await $fetch(s.url, { retry: 0, timeout: 5_000 }).catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 500 });
    expect(s.received).toHaveLength(3);
    for (const init of inits) {
      expect(init).toMatchObject({ retry: 0, timeout: 5_000 });
      expect(init).not.toHaveProperty('staunch');
    }
  });

  test('staunch: { retry: false } leaves only ofetch retrying (its retry: 2 is two retries)', async () => {
    const s = await failing();
    const { fetch, inits } = staunch();
    const $fetch = createOfetch({ fetch: fetch as typeof globalThis.fetch });
    const err = await $fetch(s.url, { retry: 2, staunch: { retry: false } } as never).catch(
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ status: 500 });
    expect(s.received).toHaveLength(3);
    for (const init of inits) expect(init).not.toHaveProperty('staunch');
  });

  test('a POST with ofetch’s body and the idempotencyKey shorthand is sent with the key', async () => {
    server = await httpServer((_req, res) => res.end('{"ok":true}'));
    open.add(server);
    const { fetch } = staunch();
    const $fetch = createOfetch({ fetch: fetch as typeof globalThis.fetch });
    const data = await $fetch(server.url, {
      method: 'POST',
      body: { amount: 1 },
      idempotencyKey: 'order-7',
    } as never);
    expect(data).toEqual({ ok: true });
    expect(server.received.map((r) => [r.headers['idempotency-key'], r.body.toString()])).toEqual([
      ['order-7', '{"amount":1}'],
    ]);
  });
});

describe('ky wrapping staunch', () => {
  test('ky’s defaults: its 2 retries of a GET times staunch’s 3 attempts', async () => {
    const s = await failing();
    const { fetch } = staunch();
    const err = await ky(s.url, {
      fetch: fetch as typeof globalThis.fetch,
      retry: { limit: 2, delay: () => 0 },
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HTTPError);
    expect((err as HTTPError).response.status).toBe(500);
    expect(s.received).toHaveLength(9);
  });

  test('retry: 0 leaves only staunch retrying', async () => {
    const s = await failing();
    const { fetch } = staunch();
    const err = await ky(s.url, { fetch: fetch as typeof globalThis.fetch, retry: 0 }).catch(
      (e: unknown) => e,
    );
    expect((err as HTTPError).response.status).toBe(500);
    expect(s.received).toHaveLength(3);
  });

  test('staunch: { retry: false } reaches staunch through ky, and leaves only ky retrying', async () => {
    const s = await failing();
    const { fetch, inits } = staunch();
    const err = await ky(s.url, {
      fetch: fetch as typeof globalThis.fetch,
      retry: { limit: 2, delay: () => 0 },
      staunch: { retry: false },
    } as never).catch((e: unknown) => e);
    expect((err as HTTPError).response.status).toBe(500);
    expect(s.received).toHaveLength(3);
    for (const init of inits) expect(init).not.toHaveProperty('staunch');
  });
});
