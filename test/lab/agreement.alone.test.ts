/**
 * Live and sim agree on every strategy (issue 9, item 4), within a stated
 * tolerance. Live mode runs on real sockets in real time, so this file runs
 * alone, after the rest of the suite (vitest.config.ts: the `alone` project),
 * never beside suites that load both cores.
 */
import { describe, expect, it } from 'vitest';
import type * as Lab from '../../src/lab/index.js';
import { useBuiltLab } from '../helpers/built-lab.js';

const built = useBuiltLab();

describe('sim and live agree on every strategy', () => {
  /**
   * The overload burst scaled to a few seconds of real time: 300 requests over 2 s peaking at
   * 4.9 × a 100 req/s upstream (bucket of 10) that sends `Retry-After` in seconds, so that each
   * pure loop and its `+ra` twin differ; 4 attempts, 5 s deadlines (a phase lasts ≤ 7 s).
   * Tolerance (docs/lab.md, "Sim and live agree"): success within 0.12 absolute, attempts per
   * request within 10 %. Measured on the 2-core machine at load averages of 9–14, seeds 5 and 9,
   * four runs: success gaps ≤ 0.037 when the run had the machine to itself among the tests, one
   * of 0.107 (fixed+ra) with the fleet test's processes running beside it; attempts within 4 %.
   * The gap is the live event loops bunching arrivals (a `Retry-After: 1` herd returning
   * together) against a 10-token bucket, which the simulator spreads exactly.
   */
  const options: Lab.LabOptions = {
    scenario: 'overload',
    retryAfter: 'seconds',
    requests: 300,
    span: 2_000,
    capacity: 100,
    deadline: 5_000,
    attempts: 4,
    seed: 5,
  };

  it('within the stated tolerance', async () => {
    const lines: string[] = [];
    const sim = built().lab.toJson(await built().lab.runLab(options, { workers: 1 }));
    const live = built().lab.toJson(
      await built().lab.runLab({ ...options, mode: 'live' }, { progress: (l) => lines.push(l) }),
    );
    expect(lines.some((l) => l.includes('live overload'))).toBe(true);
    expect(live.mode).toBe('live');
    expect(sim.strategies.map((s) => s.name)).toEqual([...built().lab.STORM_STRATEGIES]);
    for (const [i, s] of sim.strategies.entries()) {
      const l = live.strategies[i]!;
      expect(l.name).toBe(s.name);
      expect(Math.abs(l.success - s.success), s.name).toBeLessThanOrEqual(0.12);
      expect(l.attemptsPerRequest / s.attemptsPerRequest, s.name).toBeGreaterThan(1 / 1.1);
      expect(l.attemptsPerRequest / s.attemptsPerRequest, s.name).toBeLessThan(1.1);
    }
    for (const json of [sim, live]) {
      const by = new Map(json.strategies.map((s) => [s.name, s]));
      // The pure loop and its +ra twin are different strategies: the hint changes the attempts.
      expect(by.get('full-jitter')!.success).toBeLessThan(by.get('full-jitter+ra')!.success - 0.1);
      expect(by.get('staunch')!.success).toBeGreaterThanOrEqual(0.99);
    }
    // staunch's thrift, exactly in sim (deterministic: 1.01); live is held to sim by the
    // stated tolerance above (within 10 %): one CI run on a quiet machine gave 1.07 live.
    expect(
      sim.strategies.find((s) => s.name === 'staunch')!.attemptsPerRequest,
    ).toBeLessThanOrEqual(1.05);
  }, 150_000);
});
