/**
 * The simulator against an independent model: a plain retry loop (fixed or
 * exponential backoff, no jitter) and a token bucket, written here as a
 * priority queue of (time, order) events and nothing of the lab's. The
 * simulator drives staunch's real executor on the virtual clock; with
 * exact-time ordering both give the same attempts, in the same order, with
 * the same statuses.
 */
import { describe, expect, it } from 'vitest';
import { resolveLabOptions } from '../../src/lab/options.js';
import { seededRandom } from '../../src/lab/random.js';
import { simulateStrategy } from '../../src/lab/sim/simulate.js';

interface Model {
  capacity: number;
  burst: number;
  serviceTime: number;
  rtt: number;
  attempts: number;
  backoff: (attempt: number) => number;
}

/** The reference: every send in time order; ties by the order they were scheduled in. */
function reference(m: Model, arrivals: number[]) {
  const queue: { t: number; seq: number; req: number; attempt: number }[] = [];
  let seq = 0;
  const push = (t: number, req: number, attempt: number) => {
    queue.push({ t, seq: seq++, req, attempt });
  };
  for (const [i, t] of arrivals.entries()) push(t, i, 1);
  let tokens = m.burst;
  let at = 0;
  const log: [number, number, number][] = [];
  let ok = 0;
  while (queue.length > 0) {
    queue.sort((a, b) => a.t - b.t || a.seq - b.seq);
    const e = queue.shift()!;
    const arrive = e.t + m.rtt / 2;
    tokens = Math.min(m.burst, tokens + ((arrive - at) * m.capacity) / 1000);
    at = arrive;
    if (tokens >= 1) {
      tokens -= 1;
      log.push([arrive, 200, e.attempt]);
      ok++;
    } else {
      log.push([arrive, 429, e.attempt]);
      const back = arrive + m.rtt / 2;
      if (e.attempt < m.attempts) push(back + m.backoff(e.attempt), e.req, e.attempt + 1);
    }
  }
  return { log, ok };
}

function arrivalsOf(n: number, span: number, seed: number): number[] {
  const random = seededRandom(seed, 'test');
  return Array.from({ length: n }, () => random() * span).sort((a, b) => a - b);
}

describe('the simulator matches an independent model to the attempt', () => {
  const model = { capacity: 50, burst: 5, serviceTime: 0, rtt: 2, attempts: 4 };
  const config = resolveLabOptions({
    scenario: 'overload',
    requests: 400,
    span: 2_000,
    capacity: model.capacity,
    burst: model.burst,
    serviceTime: 0,
    rtt: model.rtt,
    rejectCost: 0,
    attempts: model.attempts,
    peak: 5,
  });

  it.each([
    ['fixed', () => 1_000],
    ['exponential', (a: number) => Math.min(20_000, 250 * 2 ** (a - 1))],
  ] as const)('%s', async (name, backoff) => {
    const arrivals = arrivalsOf(400, 2_000, 7);
    const ref = reference({ ...model, backoff }, arrivals);
    const trace = await simulateStrategy(config, name, arrivals);
    const sim = trace.arrivals.map((t, i) => [t, trace.statuses[i], trace.attempts[i]]);
    expect(sim.length).toBe(ref.log.length);
    for (let i = 0; i < sim.length; i++) {
      expect(sim[i]![0]).toBeCloseTo(ref.log[i]![0], 6);
      expect(sim[i]!.slice(1)).toEqual(ref.log[i]!.slice(1));
    }
    expect(trace.ok.reduce((a, b) => a + b, 0)).toBe(ref.ok);
    // The scenario is tight enough that order matters: some retries win and some lose a token.
    expect(ref.log.filter((l) => l[1] === 429).length).toBeGreaterThan(100);
  });

  it('a retry due at 1000.1 ms takes the token before an arrival at 1000.4 ms', async () => {
    const tiny = resolveLabOptions({
      ...{ scenario: 'overload', requests: 3, span: 2_000, peak: 100 },
      ...{ capacity: 1, burst: 1, serviceTime: 0, rtt: 0, rejectCost: 0 },
    });
    const trace = await simulateStrategy(tiny, 'fixed', [0, 0.1, 1000.4]);
    const log = trace.arrivals.map((t, i) => [+t.toFixed(3), trace.statuses[i], trace.attempts[i]]);
    expect(log).toEqual([
      [0, 200, 1],
      [0.1, 429, 1],
      [1000.1, 200, 2],
      [1000.4, 429, 1],
      [2000.4, 200, 2],
    ]);
  });
});
