/**
 * The interval bench/lib/rounds.mjs prints beside a variant's ratio: a two-level
 * bootstrap over processes and rounds. Pure logic on made-up rounds.
 */
import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../src/lab/random.js';
import {
  type MeasuredRound,
  median,
  pooledInterval,
  ratioInterval,
  readSet,
  verdict,
} from '../lib/interval.mjs';

/** A fresh seeded generator for each interval, as bench/lib/rounds.mjs's `intervalOf` makes. */
const draws = (): (() => number) => seededRandom(7, 'bench-interval-test');

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
    const [low, high] = ratioInterval(measured, 'agent', 'bare', 3, draws());
    expect(low).toBeCloseTo(0.9, 12);
    expect(high).toBeCloseTo(0.9, 12);
  });

  it('widens with one process that runs far off the others for its whole life', () => {
    const drift = [1, 0.95, 1.05, 1, 0.98, 1.02, 1, 1];
    const steady = ratioInterval(
      rounds([100, 100, 100], [94, 95, 96], drift),
      'agent',
      'bare',
      3,
      draws(),
    );
    const lottery = ratioInterval(
      rounds([100, 100, 100], [94, 95, 75], drift),
      'agent',
      'bare',
      3,
      draws(),
    );
    expect(steady[1] - steady[0]).toBeLessThan(0.03);
    expect(lottery[1] - lottery[0]).toBeGreaterThan(0.08);
    // The slow process is drawn more than once in some draws and not at all in others.
    expect(lottery[0]).toBeLessThan(0.86);
    expect(lottery[1]).toBeGreaterThan(0.93);
  });

  it('holds the ratio of the pooled rounds, and prints the same for the same data', () => {
    const measured = rounds([100, 104, 97, 99], [92, 95, 90, 96], [1, 0.97, 1.03, 1.01, 0.99]);
    const point = median(measured.map((r) => r.cells.agent!.rps / r.cells.bare!.rps));
    const interval = ratioInterval(measured, 'agent', 'bare', 4, draws());
    expect(interval[0]).toBeLessThanOrEqual(point);
    expect(interval[1]).toBeGreaterThanOrEqual(point);
    expect(ratioInterval(measured, 'agent', 'bare', 4, draws())).toEqual(interval);
  });

  it('draws only the rounds with one process a variant', () => {
    const measured: MeasuredRound[] = [88, 90, 92].map((rps) => ({
      cells: { bare: { rps: 100 }, agent: { rps } },
    }));
    const [low, high] = ratioInterval(measured, 'agent', 'bare', 1, draws());
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

describe('pooledInterval', () => {
  it("is one set's interval for one set, and narrows as sets of the same machine are added", () => {
    const drift = [1, 0.97, 1.03, 1, 0.99, 1.01];
    const set = { measured: rounds([100, 98, 103], [93, 97, 90], drift), processes: 3 };
    const alone = pooledInterval([set], 'agent', 'bare', draws());
    expect(alone).toEqual(ratioInterval(set.measured, 'agent', 'bare', 3, draws()));
    const others = [
      { measured: rounds([99, 101, 100], [95, 92, 94], drift), processes: 3 },
      { measured: rounds([102, 97, 100], [91, 96, 94], drift), processes: 3 },
      { measured: rounds([100, 100, 99], [94, 93, 96], drift), processes: 3 },
    ];
    const pooled = pooledInterval([set, ...others], 'agent', 'bare', draws());
    expect(pooled[1] - pooled[0]).toBeLessThan(alone[1] - alone[0]);
    expect(pooled[0]).toBeGreaterThan(0.9);
    expect(pooled[1]).toBeLessThan(0.97);
  });
});

describe('readSet', () => {
  it('reads the round lines of a log, with or without processes, and skips the warm-up', () => {
    const log = [
      'undici-overhead: bare, agent; 2 rounds (+1 warm-up) × 0.5 s each, concurrency 32, 2 processes per variant',
      '  warm-up (load 1.00): bare 10 [9 11] (1.000), agent@x 5 [5 5] (0.500)',
      '  round 1 (load 1.10): bare 100 [90 110] (1.000), agent@x 95 [94 96] (0.950)',
      '  round 2 (load 1.20): bare 200 [190 210] (1.000), agent@x 180 [170 190] (0.900)',
      '       bare        150  1.000  bare',
    ].join('\n');
    const set = readSet(log);
    expect(set.processes).toBe(2);
    expect(set.measured).toEqual([
      {
        cells: {
          bare: { rps: 100, processes: [{ rps: 90 }, { rps: 110 }] },
          'agent@x': { rps: 95, processes: [{ rps: 94 }, { rps: 96 }] },
        },
      },
      {
        cells: {
          bare: { rps: 200, processes: [{ rps: 190 }, { rps: 210 }] },
          'agent@x': { rps: 180, processes: [{ rps: 170 }, { rps: 190 }] },
        },
      },
    ]);
    const single = readSet('  round 1 (load 1.00): bare 100 (1.000), agent 90 (0.900)\n');
    expect(single).toEqual({
      measured: [{ cells: { bare: { rps: 100 }, agent: { rps: 90 } } }],
      processes: 1,
    });
  });

  it("reads a --skip set's twins (<variant>.late) as variants of their own", () => {
    const log =
      '  round 1 (load 1.00): bare 100 [90 110] (1.000), agent 95 [94 96] (0.950), ' +
      'bare.late 104 [94 114] (1.000), agent.late 101 [100 102] (0.971)\n';
    const { measured } = readSet(log);
    expect(Object.keys(measured[0]!.cells)).toEqual(['bare', 'agent', 'bare.late', 'agent.late']);
    expect(measured[0]!.cells['agent.late']).toEqual({
      rps: 101,
      processes: [{ rps: 100 }, { rps: 102 }],
    });
  });

  it('reads the --json output, measured rounds only', () => {
    const cells = (rps: number) => ({ bare: { rps: 100 }, agent: { rps } });
    const json = JSON.stringify({
      config: { processes: 1 },
      rounds: [
        { warmup: true, cells: cells(10) },
        { warmup: false, cells: cells(90) },
      ],
    });
    expect(readSet(json)).toEqual({
      measured: [{ warmup: false, cells: cells(90) }],
      processes: 1,
    });
  });

  it('says so when the output holds no measured round', () => {
    expect(() => readSet('undici-overhead: nothing ran\n')).toThrow(/no measured rounds/);
  });
});
