/**
 * A fixed-window quota shared by independent clients (the lab's
 * `window-quota` at 40 a second, 20 closed loops for 5 s, seeded, in virtual
 * time): once the windows are learned, staunch pays few 429s per success,
 * and keeps the goodput of a full window each second.
 */
import { describe, expect, it } from 'vitest';
import { evaluate } from '../../src/lab/evaluate.js';
import { resolveLabOptions } from '../../src/lab/options.js';
import { simulateStrategy } from '../../src/lab/sim/simulate.js';

async function run(seed: number) {
  const config = resolveLabOptions({
    scenario: 'window-quota',
    clients: 20,
    concurrency: 20,
    capacity: 40,
    span: 5_000,
    seed,
  });
  const trace = await simulateStrategy(config, 'staunch', []);
  const result = evaluate(config, [], [{ name: 'staunch', description: '', trace, wallMs: 0 }]);
  return { trace, metrics: result.strategies[0]! };
}

describe('window-quota: 20 independent clients under 40 a second', () => {
  it.each([1, 2, 3])(
    'seed %i: at most 0.15 429s per success, every request answered',
    async (seed) => {
      const { trace, metrics } = await run(seed);
      const refused = Array.from(trace.statuses).filter((s) => s === 429).length;
      const answered = Array.from(trace.ok).reduce((a, b) => a + b, 0);
      expect(refused / answered).toBeLessThanOrEqual(0.15);
      expect(metrics.tooManyRequests / metrics.successes).toBeLessThanOrEqual(0.15);
      expect(metrics.success).toBe(1);
      // 40 a second: every window full, as before the windows were learned from the counts.
      expect(metrics.goodput).toBeGreaterThanOrEqual(39.8);
    },
  );

  it('the first window costs no 429 past the one that spends it: the others stop on its count', async () => {
    const { trace } = await run(1);
    const first = Array.from(trace.statuses).filter(
      (s, i) => s === 429 && trace.arrivals[i]! < 1_000,
    );
    // Before the window's end told on every count was used: 19 (every client but one).
    expect(first.length).toBeLessThanOrEqual(1);
  });
});
