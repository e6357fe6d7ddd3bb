import { afterEach, describe, expect, it } from 'vitest';
import { withoutPacing } from '../../src/lab/live/runner.js';
import { matrixMarkdown, renderMatrix, runMatrix, verdictOf } from '../../src/lab/matrix.js';
import { optimum } from '../../src/lab/optimum.js';
import { resolveLabOptions } from '../../src/lab/options.js';
import type { LabResult } from '../../src/lab/result.js';
import {
  FixedWindow,
  isAnswer,
  responseHeaders,
  ServerModel,
  type ServerOptions,
} from '../../src/lab/server-model.js';
import { simulateStrategy } from '../../src/lab/sim/simulate.js';
import { httpServer, type TestServer } from '../helpers/server.js';

const base: ServerOptions = {
  capacity: 10,
  burst: 1,
  serviceTime: 0,
  queue: 0,
  retryAfter: 'seconds',
  rejectCost: 0,
  outages: [],
  failureRate: 0,
};

describe('the fixed-window quota', () => {
  it('allows capacity × window per window, resets at the boundary, says when', () => {
    const w = new FixedWindow(1_000, 3);
    const at = (t: number) => w.arrive(t, true);
    expect([0, 10, 20].map((t) => at(t).headers!['ratelimit-remaining'])).toEqual(['2', '1', '0']);
    const refused = at(400);
    expect(refused).toMatchObject({ status: 429, retryAfter: 600 });
    expect(refused.headers).toMatchObject({
      'ratelimit-limit': '3',
      'ratelimit-remaining': '0',
      'ratelimit-reset': '1',
      'x-ratelimit-remaining': '0',
      'x-ratelimit-reset': '1',
    });
    expect(responseHeaders('seconds', refused)).toMatchObject({ 'retry-after': '1' });
    expect(at(1_000)).toMatchObject({ status: 200, headers: { 'ratelimit-remaining': '2' } });
  });

  it('serves through the model with the service time and its counters', () => {
    const s = new ServerModel({ ...base, quota: 'fixed-window', serviceTime: 50 }, () => 0.5);
    const first = s.arrive(0);
    expect(first).toMatchObject({ status: 200, delay: 50 });
    expect(first.headers!['x-ratelimit-remaining']).toBe('9');
    for (let i = 0; i < 9; i++) s.arrive(1);
    expect(s.arrive(2)).toMatchObject({ status: 429, delay: 0, retryAfter: 998 });
  });
});

describe('sporadic 429s', () => {
  it('alternate: 404, then 429 Retry-After: 0, and so on; outages do not count', () => {
    const s = new ServerModel(
      { ...base, sporadic: 'alternate', outages: [{ start: 5, end: 6 }] },
      () => 0.5,
    );
    const seen = [0, 1, 5, 7, 8].map((t) => {
      const v = s.arrive(t);
      return [v.status, responseHeaders('seconds', v)['retry-after']];
    });
    expect(seen).toEqual([
      [404, undefined],
      [429, '0'],
      [503, undefined],
      [404, undefined],
      [429, '0'],
    ]);
  });

  it('random: 429 Retry-After: 0 with the given probability, before the quota', () => {
    const draws = [0.01, 0.5, 0.02, 0.9];
    let i = 0;
    const s = new ServerModel(
      { ...base, burst: 10, sporadic: 'random', sporadicRate: 0.03 },
      () => draws[i++]!,
    );
    expect([0, 0, 0, 0].map((t) => s.arrive(t).status)).toEqual([429, 200, 429, 200]);
  });

  it('counts a 404 as an answer, a 408 or 429 or 5xx not', () => {
    expect([200, 204, 404, 410, 408, 429, 500, 503].map(isAnswer)).toEqual([
      true,
      true,
      true,
      true,
      false,
      false,
      false,
      false,
    ]);
  });
});

describe('the optimum', () => {
  const input = { arrivals: [], rtt: 0, deadline: 60_000, attempts: 6 };

  it('of a closed loop: one client, a token every 100 ms, until the span ends', () => {
    const o = optimum({ ...input, server: base, concurrency: 1, span: 1_000, requests: 100 });
    // Sent at 0 (served at once), 0, 100, …, 900 (served at 100, …, 1000).
    expect(o).toMatchObject({ requests: 11, successes: 11, finish: 1_000, success: 1 });
  });

  it('of a sequential client: a 429 Retry-After: 0 costs one round trip', () => {
    const server = { ...base, capacity: 1e6, burst: 1e6, serviceTime: 5, sporadic: 'alternate' };
    const o = optimum({
      ...input,
      rtt: 2,
      server,
      concurrency: 1,
      span: 1e6,
      requests: 4,
    } as never);
    // 0 → 7; then each request meets a 429 first: 7 → 16, 16 → 25, 25 → 34.
    expect(o).toMatchObject({ requests: 4, successes: 4, finish: 34 });
  });

  it('of a fixed window: the window is full, the next one opens at its boundary', () => {
    const server: ServerOptions = { ...base, quota: 'fixed-window', capacity: 2 };
    const o = optimum({ ...input, arrivals: [0, 0, 0, 0, 0], server, deadline: 1_500 });
    // Two per second: at 0, 0, 1000, 1000; the fifth would be served at 2000, past its deadline.
    expect(o).toMatchObject({ successes: 4, success: 0.8 });
    expect(Array.from(o.completions)).toEqual([0, 0, 1_000, 1_000]);
  });
});

describe('pure loops and +ra loops', () => {
  it('a pure loop never sees Retry-After: 0, its +ra twin retries at once (sim)', async () => {
    const config = resolveLabOptions({ scenario: 'sequential', requests: 20 });
    const pure = await simulateStrategy(config, 'fixed', []);
    const ra = await simulateStrategy(config, 'fixed+ra', []);
    const slowest = (t: typeof pure) => Math.max(...t.end.map((e, i) => e - t.start[i]!));
    expect(slowest(pure)).toBeGreaterThanOrEqual(1_000);
    expect(slowest(ra)).toBeLessThan(200);
    expect(pure.arrivals.length).toBe(ra.arrivals.length);
  });

  let server: TestServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('live: the transport of a pure loop strips every pacing header, nothing else', async () => {
    server = await httpServer((_req, res) => {
      res.writeHead(429, {
        'retry-after': '3',
        'ratelimit-remaining': '0',
        'x-ratelimit-reset': '5',
        'x-request-id': 'abc',
      });
      res.end('slow down');
    });
    const res = await withoutPacing(`${server.url}/v1`, {});
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBeNull();
    expect(res.headers.get('ratelimit-remaining')).toBeNull();
    expect(res.headers.get('x-ratelimit-reset')).toBeNull();
    expect(res.headers.get('x-request-id')).toBe('abc');
    expect(await res.text()).toBe('slow down');
    expect(server.received).toHaveLength(1);
  });
});

describe('the verdict', () => {
  const result = (staunch: { success: number; attempts: number; goodput: number }) =>
    ({
      config: { goal: 0.97 },
      optimum: { success: 1, goodput: 100 },
      strategies: [
        { name: 'fixed', success: 0.9, attemptsPerRequest: 2, goodput: 80 },
        { name: 'fixed+ra', success: 0.95, attemptsPerRequest: 1.5, goodput: 90 },
        { name: 'staunch', ...staunch, attemptsPerRequest: staunch.attempts },
      ],
    }) as unknown as LabResult;
  const failed = (r: LabResult) =>
    verdictOf(r)!
      .checks.filter((c) => !c.pass)
      .map((c) => c.name);

  it('passes at ≥ best − 1 pt, ≤ the fewest attempts, ≥ 0.97 of the optimum', () => {
    expect(verdictOf(result({ success: 0.99, attempts: 1.5, goodput: 97 }))!.pass).toBe(true);
  });

  it('names each check that fails', () => {
    expect(failed(result({ success: 0.939, attempts: 1.5, goodput: 97 }))).toEqual([
      'success',
      'optimum',
    ]);
    expect(failed(result({ success: 1, attempts: 1.51, goodput: 97 }))).toEqual(['attempts']);
    expect(failed(result({ success: 1, attempts: 1, goodput: 96 }))).toEqual(['optimum']);
  });

  it('runs a scenario of the matrix and prints it within 100 columns', async () => {
    const entries = await runMatrix({ scenarios: ['sequential'] }, { workers: 1 });
    expect(entries).toHaveLength(1);
    expect(entries[0]!.verdict).not.toBeNull();
    const text = renderMatrix(entries);
    for (const line of text.split('\n')) expect(line.length, line).toBeLessThanOrEqual(100);
    expect(text).toMatch(/^sequential .*(pass|FAIL)/m);
    expect(matrixMarkdown(entries)).toContain('`npx staunch lab --scenario sequential`');
  });
});
