/**
 * The interval bench/rounds.mjs prints beside a variant's ratio: a two-level
 * bootstrap over processes and rounds. Pure logic on made-up rounds.
 */
import { describe, expect, it } from 'vitest';
import { type MeasuredRound, median, ratioInterval, verdict } from '../../bench/interval.mjs';

/** Rounds where each process of `variant` and `base` serves the given requests/s, times `drift[r]`. */
function rounds(
  base: readonly number[],
  variant: readonly number[],
  drift: readonly number[],
): MeasuredRound[] {
  const cell = (rps: readonly number[], d: number) => {
    const processes = rps.map((x) => ({ rps: x * d }));
    return { rps: processes.reduce((a, p) => a + p.rps, 0) / processes.length, processes };
  };
  return drift.map((d) => ({ cells: { bare: cell(base, d), agent: cell(variant, d) } }));
}

describe('ratioInterval', () => {
  it('is a point when every process and round agrees', () => {
    const measured = rounds([100, 100, 100], [90, 90, 90], [1, 0.9, 1.1, 1.05]);
    const [low, high] = ratioInterval(measured, 'agent', 'bare', 3);
    expect(low).toBeCloseTo(0.9, 12);
    expect(high).toBeCloseTo(0.9, 12);
  });

  it('widens with one process that runs far off the others for its whole life', () => {
    const drift = [1, 0.95, 1.05, 1, 0.98, 1.02, 1, 1];
    const steady = ratioInterval(rounds([100, 100, 100], [94, 95, 96], drift), 'agent', 'bare', 3);
    const lottery = ratioInterval(rounds([100, 100, 100], [94, 95, 75], drift), 'agent', 'bare', 3);
    expect(steady[1] - steady[0]).toBeLessThan(0.03);
    expect(lottery[1] - lottery[0]).toBeGreaterThan(0.08);
    // The slow process is drawn more than once in some draws and not at all in others.
    expect(lottery[0]).toBeLessThan(0.86);
    expect(lottery[1]).toBeGreaterThan(0.93);
  });

  it('holds the ratio of the pooled rounds, and prints the same for the same data', () => {
    const measured = rounds([100, 104, 97, 99], [92, 95, 90, 96], [1, 0.97, 1.03, 1.01, 0.99]);
    const point = median(measured.map((r) => r.cells.agent!.rps / r.cells.bare!.rps));
    const interval = ratioInterval(measured, 'agent', 'bare', 4);
    expect(interval[0]).toBeLessThanOrEqual(point);
    expect(interval[1]).toBeGreaterThanOrEqual(point);
    expect(ratioInterval(measured, 'agent', 'bare', 4)).toEqual(interval);
  });

  it('draws only the rounds with one process a variant', () => {
    const measured: MeasuredRound[] = [88, 90, 92].map((rps) => ({
      cells: { bare: { rps: 100 }, agent: { rps } },
    }));
    const [low, high] = ratioInterval(measured, 'agent', 'bare', 1);
    expect(low).toBeGreaterThanOrEqual(0.88);
    expect(high).toBeLessThanOrEqual(0.92);
    expect(low).toBeLessThan(high);
  });
});

describe('verdict', () => {
  it('is met or not only when the whole interval is on one side of the goal', () => {
    expect(verdict(0.97, [0.955, 0.99], 0.95)).toBe('met');
    expect(verdict(0.93, [0.9, 0.949], 0.95)).toBe('NOT met');
    expect(verdict(0.953, [0.918, 0.987], 0.95)).toBe('met by the median; the interval holds both');
    expect(verdict(0.919, [0.869, 0.978], 0.95)).toBe(
      'short by the median; the interval holds both',
    );
  });
});
