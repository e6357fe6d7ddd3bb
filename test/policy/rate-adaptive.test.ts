/**
 * The adaptive rate's learning (issue 9): the signals, the cut and its
 * floor, the futility rule, and a fleet on one store; pure operations on an
 * injected clock, and simulations on the fake clock.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ADAPTIVE,
  RATE_KEY_PREFIX,
  RateLimiter,
  rateLimitDefaults,
} from '../../src/policy/rate/limiter.js';
import { type RateFeedbackArgs, type RateState, rateFeedback } from '../../src/policy/rate/ops.js';
import { memoryStore } from '../../src/store/memory.js';
import { fakeClock } from '../helpers/clock.js';
import { simulate } from './rate-sim.js';

const cfg = { ...ADAPTIVE, rps: null, burst: null };
const T0 = 1_767_225_600_000;
const KEY = 'https://api.example.com';

function args(
  signal: RateFeedbackArgs['signal'],
  extra: Partial<RateFeedbackArgs> = {},
): RateFeedbackArgs {
  return {
    cfg,
    signal,
    pauseUntil: null,
    measured: 50,
    accepted: 45,
    fraction: 0.1,
    sentAt: null,
    ...extra,
  };
}

/** Engaged at `T0` from a 429 with these estimates. */
function engagedAt(extra: Partial<RateFeedbackArgs> = {}): RateState {
  return rateFeedback.apply(undefined, args('throttle', extra), T0).state as RateState;
}

/** Feeds responses `gap` ms apart, refused where `refused[i]`, each sent 5 ms before its answer. */
function feed(state: RateState, from: number, gap: number, refused: boolean[]) {
  let s = state;
  let now = from;
  for (const r of refused) {
    now += gap;
    s = rateFeedback.apply(s, args(r ? 'throttle' : 'success', { sentAt: now - 5 }), now)
      .state as RateState;
  }
  return { state: s, now };
}

const every = (n: number, k: number) => Array.from({ length: n }, (_, i) => i % k === 0);

describe('rate feedback: engaging and cutting', () => {
  it.each([
    // measured, accepted, expected rate: max(accepted, beta × measured)
    [50, 45, 45],
    [50, 10, 50 * ADAPTIVE.beta],
    [50, 0, 50 * ADAPTIVE.beta],
    [0.2, 0, ADAPTIVE.minRate],
  ])('engages (send %d/s, accepted %d/s) at %d/s', (measured, accepted, rate) => {
    const s = engagedAt({ measured, accepted });
    expect(s.rate).toBeCloseTo(rate, 9);
    expect(s.wMax).toBeCloseTo(Math.max(rate, measured), 9);
  });

  it('an engagement in a ramp aims its curve at the recent accepted rate', () => {
    // The meters lag a ramp (140/s sent, 130/s accepted, averaged over half-second buckets);
    // the last few hundred ms were accepted at 190/s.
    const s = engagedAt({ measured: 140, accepted: 130, peak: 190 });
    expect(s.rate).toBe(130);
    expect(s.wMax).toBe(190);
    // The curve from 130 passes 190 as after a cut of that depth (one by β takes a second).
    expect(s.plateau - T0).toBeCloseTo(1_000 * Math.cbrt((1 - 130 / 190) / ADAPTIVE.scale), 2);
    // A peak under the meters changes nothing; a stated rate is not overridden by it.
    expect(engagedAt({ measured: 140, accepted: 130, peak: 100 }).wMax).toBe(140);
    const stated = rateFeedback.apply(
      undefined,
      args('pause', { pauseUntil: T0 + 1_000, stated: 20, peak: 190 }),
      T0,
    ).state as RateState;
    expect(stated.wMax).toBe(20);
  });

  it('cuts once per hold-off, for requests sent after the last cut, never below the accepted rate', () => {
    const s = engagedAt({ measured: 100, accepted: 0 });
    const at = T0 + ADAPTIVE.holdoffMs;
    // Sent before the cut: nothing.
    const early = rateFeedback.apply(s, args('throttle', { sentAt: T0 - 1, accepted: 0 }), at);
    expect((early.state as RateState).rate).toBe(s.rate);
    // Within the hold-off: nothing.
    const soon = rateFeedback.apply(s, args('throttle', { sentAt: T0 + 10, accepted: 0 }), T0 + 20);
    expect((soon.state as RateState).rate).toBe(s.rate);
    // After it: beta × the rate in force, or the accepted rate if higher.
    for (const accepted of [0, 80, 200]) {
      const cut = rateFeedback.apply(
        s,
        args('throttle', { sentAt: at - 5, measured: 100, accepted }),
        at,
      );
      const expected = Math.min(s.rate, Math.max(accepted, ADAPTIVE.beta * s.rate));
      expect((cut.state as RateState).rate).toBeCloseTo(expected, 9);
      expect(cut.result.reset).toBe(expected < s.rate);
    }
  });

  it('cuts as deep as the 429 fraction of paced sends says, at most to a quarter', () => {
    const s = engagedAt({ measured: 100, accepted: 0, fraction: 0.5 });
    // Half of the paced sends refused: the server takes half of the rate in force.
    const { state, now } = feed(s, T0, 40, every(40, 2));
    const cut = rateFeedback.apply(
      state,
      args('throttle', { sentAt: now + 995, measured: 100, accepted: 0 }),
      now + 1_000,
    );
    const low = state.low > 0 ? state.low : state.rate;
    expect((cut.state as RateState).rate).toBeCloseTo(Math.min(state.rate, low) * 0.5, 6);
  });
});

describe('rate feedback: a 429 pattern that does not respond to the rate', () => {
  it('a cut that left a small 429 fraction as it was is futile: the key holds its rate', () => {
    // Engaged with 10 % refused; after it, 10 % still refused.
    const s = engagedAt({ measured: 50, accepted: 45, fraction: 0.1 });
    const { state, now } = feed(
      s,
      T0,
      40,
      every(20, 10).map((r, i) => r || i === 15),
    );
    expect(state.tally.slice(0, 2)).toEqual([20, 3]);
    const at = T0 + ADAPTIVE.holdoffMs + 50;
    expect(at).toBeGreaterThan(now);
    const r = rateFeedback.apply(state, args('throttle', { sentAt: at - 5 }), at);
    const held = r.state as RateState;
    expect(held.rate).toBe(state.rate);
    expect(r.result.reset).toBe(false);
    expect(held.lastDecrease).toBe(at);
    expect(held.tally).toEqual([0, 0, 0, 0]);
  });

  it.each([
    ['the fraction fell (a quota answering a lower rate)', 0.5, every(20, 20)],
    ['the fraction rose (the rate grew past a quota)', 0.1, every(20, 2)],
  ])('no hold when %s', (_name, fraction, refused) => {
    const s = engagedAt({ measured: 50, accepted: 0, fraction });
    const { state } = feed(s, T0, 40, refused);
    const at = T0 + ADAPTIVE.holdoffMs + 50;
    const r = rateFeedback.apply(state, args('throttle', { sentAt: at - 5, accepted: 0 }), at);
    expect((r.state as RateState).rate).toBeLessThan(state.rate);
  });

  it('a server refusing 5 % at random costs the caller nothing, with or without the limiter', async () => {
    const base = {
      quota: 0,
      upstream: 'random',
      refuse: 0.05,
      demand: 100,
      seconds: 30,
      warmup: 5,
    } as const;
    const none = await simulate({ ...base, limiter: false });
    const adaptive = await simulate({ ...base, limiter: rateLimitDefaults });
    expect(adaptive.succeeded).toBeGreaterThanOrEqual(none.succeeded * 0.99);
    expect(adaptive.shed).toBe(0);
  });
});

describe('rate feedback properties', () => {
  const signal = fc.constantFrom<RateFeedbackArgs['signal']>('throttle', 'success', 'pause');
  const step = fc.record({
    dt: fc.integer({ min: 0, max: 1_500 }),
    signal,
    measured: fc.double({ min: 0, max: 500, noNaN: true }),
    accepted: fc.double({ min: 0, max: 500, noNaN: true }),
    sent: fc.integer({ min: -2_000, max: 0 }),
    pause: fc.option(fc.integer({ min: 1, max: 3_000 }), { nil: null, freq: 4 }),
    joining: fc.boolean(),
  });

  it('the rate never goes below the floor, a cut never below the accepted rate, growth never lowers it', () => {
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 60 }), (steps) => {
        let state: RateState | undefined;
        let now = T0;
        for (const st of steps) {
          now += st.dt;
          const a = args(st.signal, {
            measured: st.measured,
            accepted: st.accepted,
            sentAt: now + st.sent,
            pauseUntil: st.pause === null ? null : now + st.pause,
            ...(st.joining && { joining: true }),
          });
          const before = state;
          const r = rateFeedback.apply(before, a, now);
          state = r.state as RateState | undefined;
          if (state === undefined) continue;
          expect(state.rate).toBeGreaterThanOrEqual(ADAPTIVE.minRate);
          if (before === undefined) continue;
          if (st.signal === 'success') expect(state.rate).toBeGreaterThanOrEqual(before.rate);
          if (state.rate < before.rate) {
            expect(state.rate).toBeGreaterThanOrEqual(Math.min(before.rate, st.accepted) - 1e-9);
            expect(r.result.reset).toBe(true);
            expect(state.epoch).toBeGreaterThan(before.epoch);
          }
          // A pause never moves back, and only a request sent after the last one began sets one.
          if (state.at > Math.max(before.at, now))
            expect(a.sentAt!).toBeGreaterThanOrEqual(before.pausedAt);
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('RateLimiter: growth evidence', () => {
  it('a 404 of an engaged key is growth evidence; a 503 with a hint and a 429 Retry-After: 0 are not', async () => {
    const clock = fakeClock();
    const store = memoryStore();
    const limiter = new RateLimiter(rateLimitDefaults, store, clock);
    for (let i = 0; i < 40; i++) {
      const sentAt = clock.now();
      await limiter.acquire(KEY, 1_000);
      await clock.advance(25);
      await limiter.onResponse(KEY, 200, { sentAt });
    }
    await limiter.onResponse(KEY, 429, { sentAt: clock.now() - 5 });
    const peek = () => store.peek(RATE_KEY_PREFIX + KEY, clock.now()) as RateState;
    // Sending on at the learned pace keeps the fleet's send meter (the growth ceiling) up.
    const stop = clock.autoAdvance();
    for (let i = 0; i < 20; i++) await limiter.acquire(KEY, 1_000);
    stop();
    const engaged = peek().rate;
    await limiter.onResponse(KEY, 503, { retryAfter: 1_000, sentAt: clock.now() - 5 });
    await limiter.onResponse(KEY, 429, { retryAfter: 0, sentAt: clock.now() - 5 });
    expect(peek().rate).toBe(engaged);
    expect(peek().ok![1]).toBe(0);
    await limiter.onResponse(KEY, 404, { sentAt: clock.now() - 5 });
    expect(peek().rate).toBeGreaterThan(engaged);
    expect(peek().ok![1]).toBe(1);
  });
});

describe('a fleet of 4 processes at 2.5 × a 40 req/s quota (fixed windows)', () => {
  it('shared: goodput at least 0.9 C, with fewer 429s per success than local state', async () => {
    const base = {
      quota: 40,
      demand: 100,
      seconds: 3.2,
      warmup: 0,
      upstream: 'window',
      attempts: 8,
      maxWait: 60_000,
      tail: true,
      processes: 4,
    } as const;
    for (const seed of [1, 2]) {
      const local = await simulate({ ...base, seed, limiter: rateLimitDefaults });
      const shared = await simulate({ ...base, seed, limiter: rateLimitDefaults, shared: true });
      expect(shared.succeeded).toBe(320);
      expect(shared.goodput).toBeGreaterThanOrEqual(0.9 * 40);
      expect(shared.throttled / shared.succeeded).toBeLessThan(local.throttled / local.succeeded);
    }
  });
});
