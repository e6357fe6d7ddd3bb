/**
 * staunch's defaults in virtual time at the live presets' scale (2 000
 * requests over 10 s against 200/s), where one seed's figure moves by
 * points: the seeds that once fell far below the optimum, each a rule of
 * the adaptive limiter (docs/policies.md, "Where its curve heads" and "A
 * fleet on one store").
 */
import { describe, expect, it } from 'vitest';
import { ofOptimum } from '../../src/lab/matrix.js';
import type { ScenarioName } from '../../src/lab/options.js';
import { runLab } from '../../src/lab/run.js';

async function vsOptimum(scenario: ScenarioName, seed: number): Promise<number> {
  const result = await runLab(
    {
      scenario,
      mode: 'sim',
      seed,
      requests: 2_000,
      span: 10_000,
      capacity: 200,
      strategies: ['staunch'],
    },
    { workers: 1 },
  );
  return ofOptimum(result.strategies[0]!, result.optimum).share;
}

describe('the live presets in virtual time', () => {
  // The first 429 of a ramp comes just past the quota: heading for the recent accepted rate
  // (answers 50 ms behind the sends) left these at 0.947 and 0.959, two seconds of climbing;
  // midway to the recent send rate, 0.970 and 0.986.
  it.each([7, 8])(
    'overload, seed %i: the curve after the first 429 heads for the quota',
    async (seed) => {
      expect(await vsOptimum('overload', seed)).toBeGreaterThanOrEqual(0.965);
    },
  );

  // Eight clients on one store: a refusal noted before the others joined cut the joined rate
  // from one client's share (17.7/s to the floor, 76/s, under 200/s): 0.887.
  it('fleet, seed 7: a join forgets the refusal noted at one client’s share', async () => {
    expect(await vsOptimum('fleet', 7)).toBeGreaterThanOrEqual(0.95);
  });
});
