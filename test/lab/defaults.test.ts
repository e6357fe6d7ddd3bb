/**
 * The defaults the lab shows are read from the library: a backoff is
 * recognised by what it returns (jitter, base, cap), and what is recognised
 * reproduces the backoff it was read from.
 */
import { describe, expect, it } from 'vitest';
import { backoffShape, describeBackoff, staunchDefaults } from '../../src/lab/defaults.js';
import { strategyConfig } from '../../src/lab/strategies.js';
import { DEFAULT_RETRY } from '../../src/options.js';
import { breakerDefaults } from '../../src/policy/breaker/breaker.js';
import { budgetDefaults } from '../../src/policy/budget/budget.js';
import { constantBackoff, exponentialBackoff } from '../../src/retry/backoff.js';
import { delaysOf } from '../helpers/backoff.js';

describe('backoffShape', () => {
  it.each([
    ['none', 100, 5_000],
    ['full', 250, 20_000],
    ['equal', 40, 900],
    ['decorrelated', 250, 20_000],
    ['decorrelated', 10, 300],
  ] as const)('recognises exponentialBackoff jitter %s, base %d, cap %d', (jitter, base, cap) => {
    expect(backoffShape(exponentialBackoff({ jitter, base, cap }))).toEqual({
      kind: 'exponential',
      jitter,
      base,
      cap,
    });
  });

  it('recognises a constant and says custom for anything else', () => {
    expect(backoffShape(constantBackoff(1000))).toEqual({ kind: 'constant', ms: 1000 });
    expect(describeBackoff(constantBackoff(1000))).toBe('constant 1 s');
    expect(backoffShape((attempt) => attempt * 333)).toEqual({ kind: 'custom' });
  });

  it("reads the library's default backoff: the shape found draws the same delays", () => {
    const shape = backoffShape(DEFAULT_RETRY.backoff);
    if (shape.kind !== 'exponential') throw new Error(`not recognised: ${JSON.stringify(shape)}`);
    const { jitter, base, cap } = shape;
    const rebuilt = exponentialBackoff({ jitter, base, cap });
    for (const seed of [1, 2, 3]) {
      expect(delaysOf(rebuilt, seed)).toEqual(delaysOf(DEFAULT_RETRY.backoff, seed));
    }
    // A different jitter with the same base and cap draws other delays: the check can fail.
    const other = jitter === 'full' ? 'equal' : 'full';
    expect(delaysOf(exponentialBackoff({ jitter: other, base, cap }), 1)).not.toEqual(
      delaysOf(DEFAULT_RETRY.backoff, 1),
    );
  });
});

describe('staunchDefaults', () => {
  it("states the budget and the breaker with the library's values", () => {
    const text = Object.fromEntries(staunchDefaults().map((d) => [d.option, d.text]));
    expect(text.backoff).toBe(describeBackoff(DEFAULT_RETRY.backoff));
    expect(text.budget).toContain(`${budgetDefaults.ratio * 100} % of first attempts`);
    expect(text.budget).toContain(`+ ${budgetDefaults.minPerSecond}/s`);
    expect(text.breaker).toContain(`${breakerDefaults.failureRatio * 100} % failures`);
    expect(text.rateLimit).toBe('rate limiter: adaptive');
  });

  it("is what the staunch strategy's description says", () => {
    const description = strategyConfig('staunch').description;
    for (const d of staunchDefaults()) expect(description).toContain(d.text);
    expect(strategyConfig('full-jitter').description).toContain(
      describeBackoff(exponentialBackoff({ jitter: 'full' })),
    );
  });
});
