/**
 * RateLimit-Policy on real node:http servers, the client on a fake clock:
 * the adaptive limiter learns the quota from the policy on the first
 * response and keeps within it, before any 429. Each server enforces a
 * fixed-window quota on the client's clock and counts what it accepted and
 * refused.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { StaunchOptions } from '../../src/index.js';
import { policyCeiling } from '../../src/policy/rate/learn.js';
import { RateLimiter } from '../../src/policy/rate/limiter.js';
import { rateLimitDefaults } from '../../src/policy/rate/options.js';
import { memoryStore } from '../../src/store/memory.js';
import { fakeClock } from '../helpers/clock.js';
import { client, drain, waits } from '../helpers/harness.js';
import { httpServer, type TestServer } from '../helpers/server.js';

const open: TestServer[] = [];
const stops: (() => void)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) stop();
  await Promise.all(open.splice(0).map((s) => s.close()));
});

function start(options: Omit<StaunchOptions, 'clock' | 'fetch'>) {
  const c = client(options);
  stops.push(c.stop);
  return c;
}

/**
 * `limit` requests per fixed window of `windowMs` on the client's clock,
 * 429 beyond; every answer carries `policy` as `RateLimit-Policy` (when
 * given) and the window's count as `RateLimit`.
 */
async function windowServer(limit: number, windowMs: number, policy?: string) {
  let now = () => 0;
  let index = -1;
  let used = 0;
  const accepted: number[] = [];
  const refused: number[] = [];
  const server = await httpServer((_req, res) => {
    const t = now();
    const w = Math.floor(t / windowMs);
    if (w !== index) [index, used] = [w, 0];
    const reset = Math.max(1, Math.ceil(((w + 1) * windowMs - t) / 1000));
    if (policy !== undefined) res.setHeader('ratelimit-policy', policy);
    if (used < limit) {
      used++;
      accepted.push(t);
    } else {
      refused.push(t);
      res.statusCode = 429;
    }
    res.setHeader('ratelimit', `"burst";r=${limit - used};t=${reset}`);
    res.end();
  });
  open.push(server);
  const begin = (clock: { now(): number }) => {
    now = () => clock.now();
  };
  return { server, accepted, refused, begin };
}

/** The time between each two successive requests. */
const gaps = (times: number[]) => times.slice(1).map((t, i) => t - times[i]!);

/** One request, then `n` at once, not retried: a 429 would be handed back. */
async function burst(url: string, fetch: typeof globalThis.fetch, n: number) {
  const first = await drain(fetch(`${url}/first`));
  const rest = await Promise.all(Array.from({ length: n }, (_, i) => drain(fetch(`${url}/${i}`))));
  return [first, ...rest];
}

describe('RateLimit-Policy: the quota known before the first 429', () => {
  it('30 concurrent requests under "burst";q=10;w=1 draw no 429', async () => {
    const { server, accepted, refused, begin } = await windowServer(10, 1_000, '"burst";q=10;w=1');
    const { fetch, clock } = start({ retry: false });
    begin(clock);
    const t0 = clock.now();
    const statuses = await burst(server.url, fetch, 30);
    expect(server.received).toHaveLength(31);
    expect(refused).toEqual([]);
    expect(accepted).toHaveLength(31);
    expect(statuses.every((s) => s === 200)).toBe(true);
    // Paced at the quota from the first answer on: 100 ms apart, never closer. (Where a
    // window's RateLimit says r=0 the key also pauses to its reset, t=1 in whole seconds.)
    expect(gaps(accepted).every((gap) => gap >= 100)).toBe(true);
    expect(gaps(accepted).filter((gap) => gap === 100).length).toBeGreaterThanOrEqual(25);
    expect(accepted[1]! - t0).toBe(100);
  });

  it('the same server without the policy refuses most of the burst (the test can fail)', async () => {
    const { server, refused, begin } = await windowServer(10, 1_000);
    const { fetch, clock } = start({ retry: false });
    begin(clock);
    const statuses = await burst(server.url, fetch, 30);
    expect(refused.length).toBeGreaterThanOrEqual(20);
    expect(statuses.filter((s) => s === 429)).toHaveLength(refused.length);
  });

  it('of several policies the most restrictive in requests paces; bytes and daily ones do not', async () => {
    const policy =
      '"bytes";q=4;qu="content-bytes";w=1, "daily";q=1000;w=86400, "a";q=20;w=1;pk=:YQ==:, "b";q=5;w=1;pk=:Yg==:';
    const { server, accepted, refused, begin } = await windowServer(5, 1_000, policy);
    const { fetch, clock } = start({ retry: false });
    begin(clock);
    const t0 = clock.now();
    await burst(server.url, fetch, 20);
    expect(server.received).toHaveLength(21);
    expect(refused).toEqual([]);
    // 5 a second (the "b" partition's quota): not 4 (bytes), nor the 0.5 floor a daily one hits.
    expect(accepted[1]! - t0).toBe(200);
    expect(gaps(accepted).every((gap) => gap >= 200)).toBe(true);
    expect(gaps(accepted).filter((gap) => gap === 200).length).toBeGreaterThanOrEqual(15);
  });

  it('a malformed policy is ignored: no pacing, no crash', async () => {
    const { server, begin } = await windowServer(1_000, 1_000, '"burst";q=10;w=1,');
    const { fetch, clock } = start({ retry: false });
    begin(clock);
    const statuses = await burst(server.url, fetch, 30);
    expect(statuses.every((s) => s === 200)).toBe(true);
    expect(waits(clock)).toEqual([]);
  });

  it('300 at once under a quota of 100 a second: no 429 in any window', async () => {
    const { server, refused, begin } = await windowServer(100, 1_000, '"burst";q=100;w=1');
    const { fetch, clock } = start({ retry: false });
    begin(clock);
    await burst(server.url, fetch, 300);
    expect(server.received).toHaveLength(301);
    expect(refused).toEqual([]);
  });
});

describe('policyCeiling: the rate that keeps a bucket within a quota', () => {
  it.each([
    // q / w while the bucket holds one token (rates up to 10/s: a tenth of a second's worth).
    [10, 1, 10],
    [100, 60, 100 / 60],
    [5, 1, 5],
    // Past it, b + r × w − 1 ≤ q with b = r / 10: r = (q + 1) / (w + 0.1).
    [100, 1, 101 / 1.1],
    [1000, 10, 1001 / 10.1],
  ])('%i per %i s: %d/s', (quota, window, rate) => {
    expect(policyCeiling(quota, window)).toBeCloseTo(rate, 9);
    const r = policyCeiling(quota, window);
    expect(Math.max(1, r / 10) + r * window - 1).toBeLessThanOrEqual(quota + 1e-9);
  });
});

describe('RateLimit-Policy: the ceiling is key state that a fleet shares', () => {
  it('a process that learned the policy and a second one draw on one bucket at its rate', async () => {
    const store = memoryStore();
    const clock = fakeClock();
    const a = new RateLimiter(rateLimitDefaults, store, clock);
    const b = new RateLimiter(rateLimitDefaults, store, clock);
    await a.onResponse('k', 200, { policy: { quota: 10, window: 1 }, sentAt: clock.now() });
    expect(a.active('k')).toBe(true);
    await b.onResponse('k', 200, { sentAt: clock.now() });
    expect(b.active('k')).toBe(false);
    // b joins on its own first response with the policy: the key's state is the shared one.
    await b.onResponse('k', 200, { policy: { quota: 10, window: 1 }, sentAt: clock.now() });
    expect(b.active('k')).toBe(true);
    const state = store.peek('rate:k', clock.now()) as { rate: number; ceiling: number };
    expect(state.ceiling).toBe(10);
    expect(state.rate).toBe(10);
    // Ten tokens between the two come 100 ms apart, not two at a time.
    const t0 = clock.now();
    const granted: number[] = [];
    const go: Promise<unknown>[] = [];
    for (const limiter of [a, b, a, b, a, b, a, b, a, b]) {
      go.push(limiter.acquire('k', 60_000).then(() => granted.push(clock.now() - t0)));
    }
    const stop = clock.autoAdvance();
    await Promise.all(go);
    stop();
    expect(granted).toEqual([100, 200, 300, 400, 500, 600, 700, 800, 900, 1_000]);
  });
});
