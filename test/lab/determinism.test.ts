import { describe, expect, it } from 'vitest';
import { type LabOptions, runLab, toJson } from '../../src/lab/index.js';

/** The overload burst scaled down: 800 requests over 8 s at an 80 req/s upstream. */
const small: LabOptions = { scenario: 'overload', requests: 800, capacity: 80, span: 8_000 };

const numbers = async (options: LabOptions) => {
  const json = toJson(await runLab(options, { workers: 1 }));
  for (const s of json.strategies) s.wallMs = 0;
  return json;
};

describe('sim determinism', () => {
  it('gives the same numbers for the same seed, other numbers for another seed', async () => {
    const a = await numbers({ ...small, seed: 7 });
    const b = await numbers({ ...small, seed: 7 });
    const c = await numbers({ ...small, seed: 8 });
    expect(b).toEqual(a);
    expect(a.strategies.map((s) => s.name)).toEqual([
      'fixed',
      'exponential',
      'full-jitter',
      'decorrelated',
      'staunch',
    ]);
    expect(c.strategies.map((s) => s.serverArrivals)).not.toEqual(
      a.strategies.map((s) => s.serverArrivals),
    );
  });

  it('runs the library: staunch paces itself, a fixed loop multiplies the load', async () => {
    const json = await numbers({ ...small, strategies: ['fixed', 'staunch'] });
    const [fixed, staunch] = json.strategies;
    expect(json.optimum.success).toBe(1);
    expect(fixed!.attemptsPerRequest).toBeGreaterThan(3);
    expect(fixed!.outcomes.attempts).toBeGreaterThan(0); // gave up after 6 attempts
    expect(staunch!.attemptsPerRequest).toBeLessThan(1.1);
    expect(staunch!.success).toBeGreaterThan(fixed!.success);
  });

  it('herd: a fixed delay brings every client back in the same 10 ms, jitter spreads them', async () => {
    const json = await numbers({
      scenario: 'herd',
      requests: 300,
      strategies: ['fixed', 'full-jitter'],
    });
    const [fixed, jitter] = json.strategies;
    // 300 clients retry together at 1 s, 2 s…: the peak bin holds all of them, and they
    // come back after the outage in one wave that the upstream's burst cannot absorb.
    expect(fixed!.herdPeak).toBeGreaterThan(10 * jitter!.herdPeak!);
    expect(fixed!.success).toBeLessThan(jitter!.success);
    expect(jitter!.recovery).not.toBeNull();
    // A fixed herd recovers later than the jittered one, or never (it gave up first).
    expect(fixed!.recovery ?? Number.POSITIVE_INFINITY).toBeGreaterThan(jitter!.recovery!);
  });

  it('outage: measures the recovery after the outage ends', async () => {
    const json = await numbers({
      scenario: 'outage',
      requests: 1_200,
      capacity: 100,
      span: 24_000,
      outages: [{ start: 5_000, end: 10_000 }],
      strategies: ['full-jitter'],
    });
    expect(json.strategies[0]!.recovery).not.toBeNull();
    expect(json.optimum.success).toBe(1);
  });
});
