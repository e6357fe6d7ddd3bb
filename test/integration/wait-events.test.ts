/**
 * Issue 9: time spent waiting before an attempt is visible, whatever made it
 * wait: a `wait` event per wait (reason, duration), and the `retry` event's
 * `delay` is the real time from the failure to the next attempt.
 */
import { describe, expect, test } from 'vitest';
import type { RetryEvent, WaitEvent } from '../../src/index.js';
import { client } from '../helpers/harness.js';
import { httpServer, type TestServer } from '../helpers/server.js';
import { closeAfterEach } from '../helpers/teardown.js';

const cleanup = closeAfterEach();

async function serve(handler: Parameters<typeof httpServer>[0]): Promise<TestServer> {
  const server = await httpServer(handler);
  cleanup.add(server);
  return server;
}

function setup(options: Parameters<typeof client>[0]) {
  const waits: WaitEvent[] = [];
  const retries: RetryEvent[] = [];
  const c = client({
    ...options,
    on: { wait: (e) => waits.push(e), retry: (e) => retries.push(e) },
  });
  cleanup.defer(c.stop);
  return { ...c, waits, retries };
}

describe('wait events', () => {
  test('a fixed rate limit: each request that waited for its token says so, with the time', async () => {
    const arrivals: number[] = [];
    const box: { now?: () => number } = {};
    const server = await serve((_req, res) => {
      arrivals.push(box.now!());
      res.end();
    });
    const { fetch, clock, waits } = setup({ rateLimit: { rps: 10, burst: 1 } });
    box.now = () => clock.now();
    await Promise.all(Array.from({ length: 5 }, () => fetch(server.url)));
    const limited = waits.filter((w) => w.reason === 'rate-limit');
    // The first had the token; the others waited 100, 200, 300, 400 ms.
    expect(limited.map((w) => w.duration).sort((a, b) => a - b)).toEqual([100, 200, 300, 400]);
    expect(limited.every((w) => w.attempt === 1 && w.method === 'GET')).toBe(true);
    expect(arrivals.at(-1)! - arrivals[0]!).toBe(400);
  });

  test('the concurrency queue: the time a request waited for a slot', async () => {
    const held: (() => void)[] = [];
    const server = await serve((_req, res) => {
      held.push(() => res.end());
    });
    const { fetch, clock, waits } = setup({ concurrency: { max: 1, queue: 5 } });
    const first = fetch(server.url);
    const second = fetch(server.url);
    while (held.length < 1) await new Promise((r) => setImmediate(r));
    await clock.advance(750);
    held.shift()!();
    await first;
    while (held.length < 1) await new Promise((r) => setImmediate(r));
    held.shift()!();
    await second;
    expect(waits.filter((w) => w.reason === 'queue').map((w) => w.duration)).toEqual([750]);
  });

  test("a 429 with Retry-After: 2: a 'server' wait, and the retry's delay is what passed", async () => {
    const server = await serve((_req, res, i) => {
      if (i === 0) res.writeHead(429, { 'retry-after': '2' });
      res.end();
    });
    const { fetch, waits, retries } = setup({ rateLimit: false });
    expect((await fetch(server.url)).status).toBe(200);
    expect(waits.map((w) => w.reason)).toEqual(['server']);
    expect(retries).toHaveLength(1);
    expect(retries[0]!.delaySource).toBe('retry-after');
    expect(retries[0]!.delay).toBe(waits[0]!.duration);
    expect(retries[0]!.delay).toBeGreaterThanOrEqual(2_000);
  });

  test('a 200 saying the quota is spent (X-RateLimit-Remaining: 0) holds the next request until the reset', async () => {
    const arrivals: number[] = [];
    const box: { now?: () => number } = {};
    const server = await serve((_req, res, i) => {
      arrivals.push(box.now!());
      if (i === 0) {
        const reset = Math.ceil((box.now!() + 3_000) / 1000);
        res.writeHead(200, { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(reset) });
      }
      res.end();
    });
    const { fetch, clock, waits } = setup({});
    box.now = () => clock.now();
    expect((await fetch(server.url)).status).toBe(200);
    expect((await fetch(server.url)).status).toBe(200);
    // No 429 was needed: the second request waited in the limiter for the window's reset.
    expect(arrivals[1]! - arrivals[0]!).toBeGreaterThanOrEqual(2_000);
    expect(waits.some((w) => w.reason === 'rate-limit' && w.duration >= 2_000)).toBe(true);
  });

  test('a retry the budget cannot pay yet waits for it, and gets through', async () => {
    const server = await serve((_req, res, i) => {
      res.statusCode = i < 3 ? 503 : 200;
      res.end();
    });
    // No earned retries, a floor of one a second (and at most one banked): three failures
    // at once, one retry paid at once, the two others a second apart.
    const { fetch, waits } = setup({
      breaker: false,
      budget: { ratio: 0, minPerSecond: 1 },
      retry: { attempts: 2, backoff: () => 0 },
      timeout: { total: 10_000 },
    });
    const results = await Promise.all([1, 2, 3].map(() => fetch(server.url)));
    expect(results.map((r) => r.status)).toEqual([200, 200, 200]);
    const budget = waits.filter((w) => w.reason === 'budget').map((w) => w.duration);
    expect(budget).toHaveLength(2);
    expect(Math.min(...budget)).toBeGreaterThanOrEqual(1_000);
    expect(Math.max(...budget)).toBeGreaterThanOrEqual(2_000);
  });
});
