import { describe, expect, it } from 'vitest';
import {
  computeMetrics,
  herdPeak,
  quantile,
  recoveryTime,
  successLatencies,
} from '../../src/lab/metrics.js';
import { optimum } from '../../src/lab/optimum.js';
import type { ServerOptions } from '../../src/lab/server-model.js';
import type { RunTrace } from '../../src/lab/trace.js';

/**
 * Four logical requests, deadline 1 000 ms:
 *  r0: 429 at 5, then 200 at 55; settled at 100 (latency 100)
 *  r1: 429 at 5, 429 at 58, 200 at 1 400; settled at 1 500 (latency 1 500: past the deadline)
 *  r2: 200 at 12; settled at 310 (latency 300)
 *  r3: 503 at 21; failed at 50
 */
const trace: RunTrace = {
  start: [0, 0, 10, 20],
  end: [100, 1_500, 310, 50],
  ok: [1, 1, 1, 0],
  arrivals: [5, 5, 12, 21, 55, 58, 1_400],
  statuses: [429, 429, 200, 503, 200, 429, 200],
  attempts: [1, 1, 1, 1, 2, 2, 3],
  outcomes: { attempts: 1 },
};

describe('metrics from a hand-checked trace', () => {
  it('computes success, percentiles, goodput, amplification and 429s', () => {
    const m = computeMetrics('hand', trace, { deadline: 1_000, capacity: 10, window: [0, 1_000] });
    expect(m).toMatchObject({
      name: 'hand',
      requests: 4,
      successes: 2, // r1 succeeded too late
      success: 0.5,
      p50: 100, // nearest rank: ceil(0.5 × 2) = 1st of [100, 300]
      p99: 300,
      goodput: 2, // r0 and r2 end within [0, 1 s)
      attemptsPerRequest: 7 / 4,
      tooManyRequests: 3,
      herdPeak: null, // 3 retries: too few to form a herd
      recovery: null, // no outage
      serverArrivals: 7,
      outcomes: { attempts: 1 },
    });
    expect(Array.from(successLatencies(trace, 1_000))).toEqual([100, 300]);
  });

  it('takes quantiles by nearest rank', () => {
    const sorted = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100];
    expect(quantile(sorted, 0.5)).toBe(50);
    expect(quantile(sorted, 0.99)).toBe(100);
    expect(quantile(sorted, 0.1)).toBe(10);
    expect(quantile([], 0.5)).toBeNull();
  });

  it('herd peak: the busiest 10 ms bin of retries over their mean bin', () => {
    // 100 retries at t = 0, then one every 10 ms from 10 to 1 000: 200 retries over 101 bins.
    const arrivals = [
      ...Array(100).fill(0),
      ...Array.from({ length: 100 }, (_, k) => 10 * (k + 1)),
    ];
    const herd: RunTrace = {
      ...trace,
      arrivals: [-500, ...arrivals],
      statuses: arrivals.map(() => 503).concat(503),
      attempts: [1, ...arrivals.map(() => 2)], // the first attempt does not count
    };
    expect(herdPeak(herd)).toBeCloseTo(100 / (200 / 101), 10);
  });

  it('recovery: first t after the outage where 2xx in [t, t + 1 s) reach 90 % of the demand', () => {
    // Outage until 1 000; 10 requests/s issued from 1 000, each settled 50 ms later;
    // the upstream serves again from 1 500.
    const start = Array.from({ length: 20 }, (_, k) => 1_000 + 100 * k);
    const served = Array.from({ length: 15 }, (_, k) => 1_500 + 100 * k);
    const r: RunTrace = {
      start,
      end: start.map((t) => t + 50),
      ok: start.map(() => 0),
      arrivals: served,
      statuses: served.map(() => 200),
      attempts: served.map(() => 1),
      outcomes: {},
    };
    // Wanting service in [t, t + 1 s): the 10 issued in it (t = 1 300: 1 300…2 200; the one of
    // 1 250 settled at 1 300 is not). At 1 400: 2xx at 1 500…2 300 = 9 ≥ 9; at 1 300 only 8.
    expect(recoveryTime(r, 1_000, 100)).toBe(400);
    expect(recoveryTime({ ...r, arrivals: [], statuses: [], attempts: [] }, 1_000, 100)).toBeNull();
  });
});

describe('optimum', () => {
  const server: ServerOptions = {
    capacity: 10,
    burst: 1,
    serviceTime: 0,
    queue: 0,
    retryAfter: 'none',
    rejectCost: 0.1,
    outages: [],
    failureRate: 0,
  };
  const input = { arrivals: [0, 0, 0, 0, 0], server, rtt: 0, deadline: 250, attempts: 1 };

  it('serves in arrival order one token per 100 ms until the deadline', () => {
    // Tokens at 0, 100, 200 fit the 250 ms deadline; 300 does not.
    expect(optimum(input)).toMatchObject({ success: 0.6, successes: 3, saturated: [100, 200] });
  });

  it('waits out an outage', () => {
    const o = optimum({ ...input, server: { ...server, outages: [{ start: 0, end: 150 }] } });
    expect(o.successes).toBe(2); // 150 and 250
  });

  it('pays 1 / (1 − p) tokens per success and loses pᴬ of them', () => {
    const o = optimum({ ...input, attempts: 2, server: { ...server, failureRate: 0.5 } });
    // Two tokens per success: at 100, then 300 is past the deadline; 1 × (1 − 0.5²).
    expect(o.successes).toBeCloseTo(0.75, 10);
    expect(o.success).toBeCloseTo(0.15, 10);
  });

  it('is 100 % when demand never exceeds capacity', () => {
    const o = optimum({ ...input, arrivals: [0, 100, 200, 300] });
    expect(o).toMatchObject({ success: 1, successes: 4, saturated: null, finish: 300 });
  });
});
