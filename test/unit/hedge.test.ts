/** The hedge options' validation and the latency tracker's percentile: pure logic. */
import { describe, expect, it } from 'vitest';
import { createFetch } from '../../src/index.js';
import { DEFAULT_HEDGE, resolveHedgeOptions } from '../../src/options.js';
import { hedgeDelay } from '../../src/policy/hedge/admit.js';
import { HEDGE_MIN_SAMPLES, HEDGE_ROUNDS, LatencyTracker } from '../../src/policy/hedge/latency.js';

describe('hedge options', () => {
  it('resolves the defaults, false to none, and a request over the client', () => {
    expect(resolveHedgeOptions({})).toEqual({
      delay: 'auto',
      max: 1,
      percentile: 0.95,
      minDelay: 10,
    });
    expect(resolveHedgeOptions(false)).toBeUndefined();
    expect(resolveHedgeOptions(undefined)).toBeUndefined();
    const client = resolveHedgeOptions({ delay: 40, max: 2 });
    expect(resolveHedgeOptions(undefined, 'init.staunch.hedge', client)).toBe(client);
    expect(resolveHedgeOptions({ max: 3 }, 'init.staunch.hedge', client)).toMatchObject({
      delay: 40,
      max: 3,
    });
    expect(resolveHedgeOptions(false, 'init.staunch.hedge', client)).toBeUndefined();
    expect(Object.isFrozen(DEFAULT_HEDGE)).toBe(true);
  });

  it.each([
    [
      { hedge: { delay: 0 } },
      RangeError,
      'hedge.delay must be a number > 0 and <= 2147483647, got 0',
    ],
    [{ hedge: { delay: 'fast' } }, TypeError, 'hedge.delay must be a number, got "fast"'],
    [{ hedge: { max: 0 } }, RangeError, 'hedge.max must be an integer >= 1 and <= 10, got 0'],
    [{ hedge: { max: 1.5 } }, RangeError, 'hedge.max must be an integer >= 1 and <= 10, got 1.5'],
    [
      { hedge: { percentile: 1.5 } },
      RangeError,
      'hedge.percentile must be a number > 0 and <= 1, got 1.5',
    ],
    [{ hedge: { minDelay: -1 } }, RangeError, 'hedge.minDelay must be a number >= 0'],
    [{ hedge: { dealy: 5 } }, TypeError, 'hedge.dealy is not an option'],
    [{ hedge: true }, TypeError, 'hedge must be an object, got true'],
  ])('createFetch(%o) throws naming the option and the value', (options, type, message) => {
    expect(() => createFetch(options as never)).toThrow(type);
    expect(() => createFetch(options as never)).toThrow(message);
  });

  it('a bad per-request hedge rejects that request before any attempt', async () => {
    let sent = 0;
    const fetch = createFetch({
      fetch: async () => {
        sent++;
        return new Response('ok');
      },
    });
    await expect(fetch('http://127.0.0.1:1/', { staunch: { hedge: { max: 0 } } })).rejects.toThrow(
      'init.staunch.hedge.max must be an integer >= 1 and <= 10, got 0',
    );
    expect(sent).toBe(0);
  });
});

describe('LatencyTracker', () => {
  it('answers nothing below the minimum of samples, then the nearest-rank percentile', () => {
    const t = new LatencyTracker();
    for (let i = 1; i < HEDGE_MIN_SAMPLES; i++) t.record('k', i);
    expect(t.percentile('k', 0.95)).toBeUndefined();
    t.record('k', HEDGE_MIN_SAMPLES);
    expect(t.percentile('k', 0.95)).toBe(19);
    expect(t.percentile('k', 0.5)).toBe(10);
    expect(t.percentile('k', 1)).toBe(20);
    expect(t.percentile('other', 0.5)).toBeUndefined();
  });

  it('keeps the last 200 samples: the old slow ones leave', () => {
    const t = new LatencyTracker();
    for (let i = 0; i < 200; i++) t.record('k', 1_000);
    for (let i = 0; i < 200; i++) t.record('k', 10);
    expect(t.count('k')).toBe(200);
    expect(t.percentile('k', 0.99)).toBe(10);
  });

  it('the delay: fixed as given; auto, the percentile rounded up, floored at minDelay', () => {
    const t = new LatencyTracker();
    expect(hedgeDelay({ ...DEFAULT_HEDGE, delay: 70 }, t, 'k')).toBe(70);
    expect(hedgeDelay(DEFAULT_HEDGE, t, 'k')).toBeUndefined();
    for (let i = 0; i < 20; i++) t.record('k', 3.2);
    expect(hedgeDelay(DEFAULT_HEDGE, t, 'k')).toBe(10);
    expect(hedgeDelay({ ...DEFAULT_HEDGE, minDelay: 0 }, t, 'k')).toBe(4);
  });
});

describe('LatencyTracker: hedges that do not pay', () => {
  const rounds = (t: LatencyTracker, key: string, wins: number, losses: number) => {
    for (let i = 0; i < wins; i++) t.recordRound(key, true);
    for (let i = 0; i < losses; i++) t.recordRound(key, false);
  };

  it('hedges freely until HEDGE_ROUNDS rounds are known, and while 4 of the last ones were won', () => {
    const t = new LatencyTracker();
    expect(t.mayHedge('k')).toBe(true);
    rounds(t, 'k', 0, HEDGE_ROUNDS - 1);
    expect(t.mayHedge('k')).toBe(true);
    rounds(t, 'k', 4, 0); // the ring: 4 wins, 16 losses
    for (let i = 0; i < 30; i++) expect(t.mayHedge('k')).toBe(true);
  });

  it('with fewer wins, one round in ten still hedges, until the wins come back', () => {
    const t = new LatencyTracker();
    rounds(t, 'k', 3, HEDGE_ROUNDS - 3);
    const allowed = Array.from({ length: 30 }, () => t.mayHedge('k'));
    expect(allowed.map((a, i) => (a ? i : -1)).filter((i) => i >= 0)).toEqual([9, 19, 29]);
    expect(t.mayHedge('other')).toBe(true);
    rounds(t, 'k', 4, 0); // four wins over the four oldest rounds: 4 among the last 20
    expect(t.mayHedge('k')).toBe(true);
  });
});
