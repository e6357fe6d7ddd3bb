import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  BUDGET_KEY_PREFIX,
  BUDGET_MEMORY_MS,
  type BudgetOptions,
  type BudgetState,
  budgetDefaults,
  budgetDeposit,
  budgetWithdraw,
  floorCap,
  RetryBudget,
  resolveBudgetOptions,
} from '../../src/policy/budget/budget.js';
import { memoryStore } from '../../src/store/memory.js';
import { fakeClock } from '../helpers/clock.js';
import { asyncStore } from './support.js';

const KEY = 'https://api.example.com';

function setup(options: BudgetOptions = {}) {
  const clock = fakeClock();
  const store = memoryStore();
  const resolved = resolveBudgetOptions(options);
  if (!resolved) throw new Error('unreachable');
  const budget = new RetryBudget(resolved, store, clock);
  const state = () => store.peek(BUDGET_KEY_PREFIX + KEY, clock.now()) as BudgetState | undefined;
  const drain = async () => {
    let n = 0;
    while (await budget.tryWithdraw(KEY)) n++;
    return n;
  };
  return { clock, store, budget, state, drain };
}

describe('resolveBudgetOptions', () => {
  it('gives the defaults for true and undefined, false for false', () => {
    expect(resolveBudgetOptions(undefined)).toBe(budgetDefaults);
    expect(resolveBudgetOptions(true)).toBe(budgetDefaults);
    expect(resolveBudgetOptions(false)).toBe(false);
    expect(budgetDefaults).toEqual({ ratio: 0.1, minPerSecond: 10 });
  });

  it('merges and freezes', () => {
    const r = resolveBudgetOptions({ ratio: 0.2 });
    expect(r).toEqual({ ratio: 0.2, minPerSecond: 10 });
    expect(Object.isFrozen(r)).toBe(true);
  });

  it.each<[unknown, ErrorConstructor, string]>([
    [{ ratio: -0.1 }, RangeError, 'budget.ratio must be a finite number >= 0, got -0.1'],
    [{ ratio: Number.POSITIVE_INFINITY }, RangeError, 'got Infinity'],
    [{ ratio: '10%' }, TypeError, 'budget.ratio must be a finite number >= 0, got "10%"'],
    [{ minPerSecond: -1 }, RangeError, 'budget.minPerSecond must be a finite number >= 0, got -1'],
    [
      { perSecond: 1 },
      TypeError,
      'budget.perSecond is not an option (expected one of: ratio, minPerSecond)',
    ],
    [[], TypeError, 'budget must be an object, got an array'],
  ])('rejects %o', (input, type, message) => {
    const run = () => resolveBudgetOptions(input as BudgetOptions);
    expect(run).toThrow(type);
    expect(run).toThrow(message);
  });
});

describe('RetryBudget', () => {
  it('starts with one second of floor and no more', async () => {
    const { drain } = setup();
    expect(await drain()).toBe(10);
  });

  it('refills the floor at minPerSecond, up to one second worth', async () => {
    const { drain, clock } = setup();
    await drain();
    await clock.advance(300);
    expect(await drain()).toBe(3);
    await clock.advance(60_000);
    expect(await drain()).toBe(10);
  });

  it('banks at least one retry when minPerSecond is below 1', async () => {
    const { drain, clock } = setup({ minPerSecond: 0.5 });
    expect(await drain()).toBe(1);
    await clock.advance(1_999);
    expect(await drain()).toBe(0);
    await clock.advance(1);
    expect(await drain()).toBe(1);
  });

  it('earns ratio of a retry per first attempt', async () => {
    const { drain, budget } = setup({ minPerSecond: 0 });
    for (let i = 0; i < 29; i++) await budget.deposit(KEY);
    expect(await drain()).toBe(2); // 2.9 earned
    await budget.deposit(KEY);
    expect(await drain()).toBe(1); // 0.9 + 0.1
  });

  it('forgets old deposits, so idle hours do not bank a storm', async () => {
    const { drain, budget, clock, state } = setup({ minPerSecond: 0 });
    for (let i = 0; i < 1_000; i++) await budget.deposit(KEY);
    await clock.advance(BUDGET_MEMORY_MS);
    // Credits are written a second at a time: the next deposit writes the 1,000 made
    // 10 s ago, decayed as of when they were made (and counts itself for later).
    await budget.deposit(KEY);
    expect(state()?.earned).toBeCloseTo(100 / Math.E, 6);
    await clock.advance(10 * BUDGET_MEMORY_MS);
    expect(await drain()).toBe(0);
  });

  it('with ratio and floor 0 never allows a retry', async () => {
    const { drain, budget } = setup({ ratio: 0, minPerSecond: 0 });
    for (let i = 0; i < 100; i++) await budget.deposit(KEY);
    expect(await drain()).toBe(0);
  });

  it('works the same over an async store', async () => {
    const clock = fakeClock();
    const budget = new RetryBudget(budgetDefaults, asyncStore(memoryStore()), clock);
    const results = await Promise.all(Array.from({ length: 15 }, () => budget.tryWithdraw(KEY)));
    expect(results.filter(Boolean)).toHaveLength(10);
  });

  it('keeps keys apart', async () => {
    const { budget, drain } = setup();
    await drain();
    expect(await budget.tryWithdraw('https://other.example.com')).toBe(true);
  });

  it('under a full outage, 400 requests × 4 attempts cost ~1.1 × 400 + floor attempts, not 1600', async () => {
    const { budget, clock } = setup();
    let attempts = 0;
    const start = clock.now();
    const logical = async () => {
      await budget.deposit(KEY);
      for (let attempt = 1; ; attempt++) {
        attempts++; // the upstream is down: every attempt fails
        if (attempt === 4) return;
        await clock.sleep(100 * 2 ** attempt);
        if (!(await budget.tryWithdraw(KEY))) return;
      }
    };
    const stop = clock.autoAdvance();
    await Promise.all(Array.from({ length: 400 }, logical));
    stop();
    const seconds = (clock.now() - start) / 1000;
    const floor = 10 * (1 + seconds); // one second banked + refill while it lasted
    expect(attempts).toBeLessThanOrEqual(1.1 * 400 + floor);
    expect(attempts).toBeGreaterThan(1.1 * 400); // and the budget did allow its share
    expect(seconds).toBeLessThan(2);
  });
});

describe('budget store operations', () => {
  const args = { ratio: 0.1, minPerSecond: 10, memoryMs: BUDGET_MEMORY_MS };

  it('have stable names', () => {
    expect([budgetDeposit.name, budgetWithdraw.name]).toEqual([
      'staunch.budget.deposit',
      'staunch.budget.withdraw',
    ]);
  });

  it('start a fresh key full and keep it long enough to forget', () => {
    const r = budgetWithdraw.apply(undefined, args, 1_000);
    expect(r.result).toBe(true);
    expect(r.state).toEqual({ floor: 9, earned: 0, at: 1_000 });
    expect(r.ttl).toBe(3 * BUDGET_MEMORY_MS);
  });

  it('take earned tokens first, then the floor', () => {
    const r = budgetWithdraw.apply({ floor: 5, earned: 1.5, at: 0 }, args, 0);
    expect(r.state).toEqual({ floor: 5, earned: 0.5, at: 0 });
    const r2 = budgetWithdraw.apply({ floor: 5, earned: 0.25, at: 0 }, args, 0);
    expect(r2.state).toEqual({ floor: 4.25, earned: 0, at: 0 });
  });

  it('floorCap is one second worth, at least one, zero when off', () => {
    expect([floorCap(10), floorCap(0.5), floorCap(0)]).toEqual([10, 1, 0]);
  });
});

describe('RetryBudget properties', () => {
  type Action = { t: 'deposit' } | { t: 'withdraw' } | { t: 'advance'; ms: number };
  const action: fc.Arbitrary<Action> = fc.oneof(
    fc.constant({ t: 'deposit' as const }),
    fc.constant({ t: 'withdraw' as const }),
    fc.record({ t: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 3_000 }) }),
  );
  const options = fc.record({
    ratio: fc.double({ min: 0, max: 2, noNaN: true }),
    minPerSecond: fc.double({ min: 0, max: 50, noNaN: true }),
  });

  it('the balance is never negative and withdrawals never exceed floor + ratio × deposits + refill', async () => {
    await fc.assert(
      fc.asyncProperty(
        options,
        fc.array(action, { maxLength: 300, size: 'max' }),
        async (opts, actions) => {
          const { budget, clock, state } = setup(opts);
          const start = clock.now();
          let deposits = 0;
          let withdrawn = 0;
          for (const a of actions) {
            if (a.t === 'advance') await clock.advance(a.ms);
            else if (a.t === 'deposit') {
              await budget.deposit(KEY);
              deposits++;
            } else if (await budget.tryWithdraw(KEY)) withdrawn++;
            const s = state();
            const cap = floorCap(opts.minPerSecond);
            if (s && (s.floor < 0 || s.earned < 0 || s.floor > cap + 1e-9)) {
              throw new Error(`balance out of bounds: ${JSON.stringify(s)}`);
            }
            const refill = (opts.minPerSecond * (clock.now() - start)) / 1000;
            if (withdrawn > cap + opts.ratio * deposits + refill + 1e-9) {
              throw new Error(
                `${withdrawn} withdrawals after ${deposits} deposits and ${refill} refill`,
              );
            }
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
