import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ADAPTIVE,
  RATE_KEY_PREFIX,
  type RateLimitDecision,
  RateLimiter,
  type RateLimitOptions,
  rateLimitDefaults,
  resolveRateLimitOptions,
} from '../../src/policy/rate/limiter.js';
import {
  type RateState,
  rateAcquire,
  rateFeedback,
  rateRefund,
} from '../../src/policy/rate/ops.js';
import { memoryStore } from '../../src/store/memory.js';
import { fakeClock } from '../helpers/clock.js';
import { simulate } from './rate-sim.js';
import { asyncStore, countingStore } from './support.js';

const KEY = 'https://api.example.com';
const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

function setup(options: RateLimitOptions | 'adaptive' = 'adaptive') {
  const clock = fakeClock();
  const memory = memoryStore();
  const store = countingStore(memory);
  const resolved = resolveRateLimitOptions(options);
  if (!resolved) throw new Error('unreachable');
  const limiter = new RateLimiter(resolved, store, clock);
  const state = () => memory.peek(RATE_KEY_PREFIX + KEY, clock.now()) as RateState | undefined;
  /** Starts an acquire and logs when (relative to now) and in which order it resolves. */
  const log: Array<{ name: string; at: number; decision: RateLimitDecision }> = [];
  let t0 = clock.now();
  /** Resets the origin of the times in `log` to now. */
  const mark = () => {
    t0 = clock.now();
  };
  /** Lets pending acquires reach their sleep, then moves time. */
  const run = async (ms: number) => {
    await flush();
    await clock.advance(ms);
  };
  const track = (name: string, maxWait = 60_000, signal?: AbortSignal) => {
    const p = limiter.acquire(KEY, maxWait, signal);
    p.then(
      (decision) => log.push({ name, at: clock.now() - t0, decision }),
      () => {},
    );
    return p;
  };
  return { clock, memory, store, limiter, state, log, track, mark, run };
}

/** Sends `n` requests `every` ms apart through an inactive adaptive limiter, each answered 200. */
async function warm(s: ReturnType<typeof setup>, n: number, every: number) {
  for (let i = 0; i < n; i++) {
    const sentAt = s.clock.now();
    await s.limiter.acquire(KEY, 1_000);
    await s.clock.advance(every);
    await s.limiter.onResponse(KEY, 200, { sentAt });
  }
}

describe('resolveRateLimitOptions', () => {
  it('is adaptive by default', () => {
    expect(resolveRateLimitOptions(undefined)).toBe(rateLimitDefaults);
    expect(resolveRateLimitOptions(true)).toBe(rateLimitDefaults);
    expect(resolveRateLimitOptions('adaptive')).toBe(rateLimitDefaults);
    expect(rateLimitDefaults).toEqual({ mode: 'adaptive' });
    expect(resolveRateLimitOptions(false)).toBe(false);
  });

  it.each([
    [{ rps: 40 }, { mode: 'fixed', rps: 40, burst: 4 }],
    [{ rps: 5 }, { mode: 'fixed', rps: 5, burst: 1 }],
    [
      { rps: 0.2, burst: 3 },
      { mode: 'fixed', rps: 0.2, burst: 3 },
    ],
  ])('%o resolves to %o', (input, expected) => {
    const r = resolveRateLimitOptions(input);
    expect(r).toEqual(expected);
    expect(Object.isFrozen(r)).toBe(true);
  });

  it.each<[unknown, ErrorConstructor, string]>([
    ['fixed', TypeError, `rateLimit must be 'adaptive', false or { rps, burst }, got "fixed"`],
    [{}, TypeError, 'rateLimit.rps must be a finite number > 0, got undefined'],
    [{ rps: 0 }, RangeError, 'rateLimit.rps must be a finite number > 0, got 0'],
    [{ rps: Number.POSITIVE_INFINITY }, RangeError, 'got Infinity'],
    [{ rps: '10' }, TypeError, 'rateLimit.rps must be a finite number > 0, got "10"'],
    [{ rps: 10, burst: 0.5 }, RangeError, 'rateLimit.burst must be a finite number >= 1, got 0.5'],
    [
      { rps: 10, perMinute: 1 },
      TypeError,
      'rateLimit.perMinute is not an option (expected one of: rps, burst)',
    ],
    [7, TypeError, 'rateLimit must be an object, got 7'],
  ])('rejects %o', (input, type, message) => {
    const run = () => resolveRateLimitOptions(input as RateLimitOptions);
    expect(run).toThrow(type);
    expect(run).toThrow(message);
  });
});

describe('RateLimiter, fixed', () => {
  it('serves waiters in FIFO order, one token interval apart', async () => {
    const s = setup({ rps: 10, burst: 1 });
    for (const name of ['a', 'b', 'c', 'd', 'e']) void s.track(name);
    await s.run(1_000);
    expect(s.log.map((l) => [l.name, l.at])).toEqual([
      ['a', 0],
      ['b', 100],
      ['c', 200],
      ['d', 300],
      ['e', 400],
    ]);
    // One reservation at a time: each token is taken at the rate in force.
    expect(s.clock.sleeps.filter((ms) => ms < 60_000)).toEqual([100, 100, 100, 100]);
  });

  it('lets a burst through at once after a quiet spell', async () => {
    const s = setup({ rps: 10, burst: 3 });
    for (const name of ['a', 'b', 'c', 'd']) void s.track(name);
    await s.run(1_000);
    expect(s.log.map((l) => l.at)).toEqual([0, 0, 0, 100]);
  });

  it('refuses at once a wait over maxWait, and reserves nothing for it', async () => {
    const s = setup({ rps: 1, burst: 1 });
    expect(await s.limiter.acquire(KEY, 0)).toEqual({ ok: true, waited: 0 });
    expect(await s.limiter.acquire(KEY, 500)).toEqual({ ok: false, retryAfter: 1_000 });
    expect(s.clock.sleeps).toEqual([]);
    void s.track('c', 1_000);
    await s.run(1_000);
    expect(s.clock.sleeps).toEqual([1_000]);
    // The decision says how long the caller waited for its token.
    expect(s.log).toEqual([{ name: 'c', at: 1_000, decision: { ok: true, waited: 1_000 } }]);
  });

  it('an abort while waiting rejects with the reason at once and gives the token back', async () => {
    const s = setup({ rps: 10, burst: 1 });
    void s.track('a');
    const controller = new AbortController();
    const b = s.track('b', 60_000, controller.signal);
    void s.track('c');
    await flush();
    const reason = new Error('caller gave up');
    controller.abort(reason);
    await expect(b).rejects.toBe(reason);
    await flush();
    void s.track('d'); // c moves up into b's place; d comes one interval after c
    await s.run(1_000);
    expect(s.log.map((l) => [l.name, l.at])).toEqual([
      ['a', 0],
      ['c', 100],
      ['d', 200],
    ]);
  });

  it('an already aborted signal rejects without touching the store', async () => {
    const s = setup({ rps: 10 });
    const reason = new Error('already');
    await expect(s.limiter.acquire(KEY, 1_000, AbortSignal.abort(reason))).rejects.toBe(reason);
    expect(s.store.calls).toEqual([]);
  });

  it("a 429's Retry-After paces that request only: the key goes on at its rate", async () => {
    const s = setup({ rps: 10, burst: 1 });
    for (const name of ['a', 'b', 'c']) void s.track(name);
    await s.run(50);
    expect(s.limiter.onResponse(KEY, 429, { retryAfter: 1_000 })).toBeUndefined();
    await s.run(1_000);
    expect(s.log.map((l) => [l.name, l.at])).toEqual([
      ['a', 0],
      ['b', 100],
      ['c', 200],
    ]);
  });

  it('a spent quota (remaining 0 with a reset) pauses every waiter, which then resume in order', async () => {
    const s = setup({ rps: 10, burst: 1 });
    for (const name of ['a', 'b', 'c', 'd']) void s.track(name);
    await s.run(50);
    await s.limiter.onResponse(KEY, 429, { remaining: 0, reset: 1_000 });
    void s.track('e');
    await s.run(5_000);
    expect(s.log.map((l) => [l.name, l.at])).toEqual([
      ['a', 0],
      ['b', 1_050],
      ['c', 1_150],
      ['d', 1_250],
      ['e', 1_350],
    ]);
  });

  it('after a pause the key resumes at its rate, not with a burst', async () => {
    const s = setup({ rps: 10, burst: 5 });
    for (let i = 0; i < 8; i++) void s.track(`r${i}`);
    await s.run(50);
    await s.limiter.onResponse(KEY, 200, { remaining: 0, reset: 1_000 });
    await s.run(5_000);
    expect(s.log.map((l) => l.at)).toEqual([0, 0, 0, 0, 0, 1_050, 1_150, 1_250]);
  });

  it('a 429 without Retry-After changes nothing in fixed mode', async () => {
    const s = setup({ rps: 10, burst: 1 });
    await s.limiter.onResponse(KEY, 429, {});
    await s.limiter.onResponse(KEY, 200, {});
    expect(s.store.calls).toEqual([]);
    expect(s.limiter.active(KEY)).toBe(true);
  });

  it('works the same over an async store', async () => {
    const clock = fakeClock();
    const resolved = resolveRateLimitOptions({ rps: 10, burst: 1 });
    if (!resolved) throw new Error('unreachable');
    const limiter = new RateLimiter(resolved, asyncStore(memoryStore()), clock);
    const order: number[] = [];
    const all = [0, 1, 2].map((i) => limiter.acquire(KEY, 10_000).then(() => order.push(i)));
    const stop = clock.autoAdvance();
    await Promise.all(all);
    stop();
    expect(order).toEqual([0, 1, 2]);
    expect(clock.sleeps.filter((ms) => ms < 10_000)).toEqual([100, 100]);
  });
});

describe('RateLimiter, adaptive', () => {
  it('costs nothing until the first 429: no store call, no wait', async () => {
    const s = setup();
    for (let i = 0; i < 100; i++)
      expect(await s.limiter.acquire(KEY, 0)).toEqual({ ok: true, waited: 0 });
    await s.limiter.onResponse(KEY, 200, { remaining: 5 });
    await s.limiter.onResponse(KEY, 503, { retryAfter: 1_000 });
    await s.limiter.onResponse(KEY, 404, {});
    await s.limiter.onResponse(KEY, 429, { retryAfter: 0 });
    // Nor does a 429 before the process has seen enough responses to measure a rate.
    await s.limiter.onResponse(KEY, 429, {});
    expect(s.store.calls).toEqual([]);
    expect(s.clock.sleeps).toEqual([]);
    expect(s.limiter.active(KEY)).toBe(false);
  });

  it('engages on a 429 at the accepted rate, never below it (here: the send rate, all accepted)', async () => {
    const s = setup();
    await warm(s, 200, 20); // 50 requests per second for 4 s, all accepted
    await s.limiter.onResponse(KEY, 429, {});
    expect(s.limiter.active(KEY)).toBe(true);
    const state = s.state();
    expect(state?.wMax).toBeCloseTo(50, 0);
    expect(state?.rate).toBeGreaterThan(ADAPTIVE.beta * 50);
    expect(state?.rate).toBeCloseTo(50, 0);
  });

  it('a 429 on the first request engages nothing: one or two sends measure no rate', async () => {
    const s = setup();
    await s.limiter.onResponse(KEY, 429, { sentAt: s.clock.now() });
    await warm(s, 9, 100);
    expect(s.limiter.active(KEY)).toBe(false);
    expect(s.store.calls).toEqual([]);
  });

  it('engages on a response saying the quota is spent, and pauses until its reset', async () => {
    const s = setup();
    await warm(s, 10, 100);
    await s.limiter.onResponse(KEY, 200, { remaining: 0, reset: 800 });
    expect(s.limiter.active(KEY)).toBe(true);
    expect(s.state()?.at).toBe(s.clock.now() + 800);
    // remaining 0 without a reset says nothing about when: no pause.
    const other = setup();
    await warm(other, 10, 100);
    await other.limiter.onResponse(KEY, 200, { remaining: 0 });
    expect(other.limiter.active(KEY)).toBe(false);
  });

  it('once engaged, paces requests at the learned rate', async () => {
    const s = setup();
    await warm(s, 200, 20);
    await s.limiter.onResponse(KEY, 429, {});
    const rate = s.state()?.rate ?? 0;
    for (let i = 0; i < 6; i++) void s.track(`r${i}`);
    await s.run(1_000);
    const gaps = s.log.slice(1).map((l, i) => l.at - s.log[i]!.at);
    for (const gap of gaps) expect(gap).toBeCloseTo(1_000 / rate, -1);
  });

  it('a spent quota pauses the key once per window: only requests sent after the pause began extend it', async () => {
    const s = setup();
    await warm(s, 200, 20);
    const sentBefore = s.clock.now() - 10;
    await s.limiter.onResponse(KEY, 429, { remaining: 0, reset: 1_000, sentAt: sentBefore });
    const pausedUntil = s.state()!.at;
    expect(pausedUntil).toBe(s.clock.now() + 1_000);
    // A 429 of a request sent before the pause began does not extend it.
    await s.clock.advance(100);
    await s.limiter.onResponse(KEY, 429, { remaining: 0, reset: 1_000, sentAt: sentBefore });
    expect(s.state()!.at).toBe(pausedUntil);
    // One sent after it began (another process of a fleet, say) may.
    await s.limiter.onResponse(KEY, 429, { remaining: 0, reset: 1_000, sentAt: s.clock.now() });
    expect(s.state()!.at).toBe(s.clock.now() + 1_000);
  });

  it('paused time does not deflate the meter', async () => {
    const s = setup();
    await warm(s, 200, 20);
    await s.limiter.onResponse(KEY, 429, { remaining: 0, reset: 5_000, sentAt: s.clock.now() });
    const { meter } = s.state()!;
    expect(meter).not.toBeNull();
    // The meter moved past the pause: at its end it reads what it read at its start.
    expect(meter![0]).toBeGreaterThanOrEqual(s.clock.now() + 4_500);
  });

  it('decreases once per round trip: a 429 for a request sent before the last decrease does not decrease again', async () => {
    const s = setup();
    await warm(s, 200, 20);
    const sentEarly = s.clock.now() - 10;
    await s.limiter.onResponse(KEY, 429, { sentAt: sentEarly });
    const after = s.state()?.rate;
    await s.limiter.onResponse(KEY, 429, { sentAt: sentEarly });
    expect(s.state()?.rate).toBe(after);
    // Nor does a 429 within the hold-off after a decrease (a windowed quota still refusing).
    await s.clock.advance(50);
    await s.limiter.onResponse(KEY, 429, { sentAt: s.clock.now() - 5 });
    expect(s.state()?.rate).toBe(after);
    await s.clock.advance(ADAPTIVE.holdoffMs);
    await s.limiter.onResponse(KEY, 429, { sentAt: s.clock.now() - 5 });
    expect(s.state()?.rate).toBeLessThan(after ?? 0);
  });

  it.each([40, 4_000])(
    'regains its previous maximum within about a second after a cut by beta, at %i req/s',
    (r) => {
      const cfg = { ...ADAPTIVE, rps: null, burst: null };
      const t0 = 1_000_000;
      // Engaged at r, all accepted; a later 429 at r cuts by beta (nothing accepted since).
      const engaged = rateFeedback.apply(
        undefined,
        {
          cfg,
          signal: 'throttle',
          pauseUntil: null,
          measured: r / cfg.beta,
          accepted: r,
          fraction: 0.1,
          sentAt: t0,
        },
        t0,
      ).state as RateState;
      const state: RateState = {
        ...engaged,
        rate: r,
        wMax: r,
        plateau: t0,
        ok: null,
        // A meter reading 4r all along (its bucket is the last one used here), so twice it caps nothing.
        meter: [t0 + 2_000, 0, 4 * r],
      };
      const at = t0 + cfg.holdoffMs;
      const cut = rateFeedback.apply(
        state,
        {
          cfg,
          signal: 'throttle',
          pauseUntil: null,
          measured: r,
          accepted: 0,
          fraction: 0.1,
          sentAt: at,
        },
        at,
      ).state as RateState;
      expect(cut.rate).toBeCloseTo(cfg.beta * r, 6);
      let s = cut;
      const rates: number[] = [];
      for (const dt of [250, 500, 750, 1_000, 1_100]) {
        s = rateFeedback.apply(
          s,
          {
            cfg,
            signal: 'success',
            pauseUntil: null,
            measured: r,
            accepted: r,
            fraction: 0,
            sentAt: at + dt,
          },
          at + dt,
        ).state as RateState;
        rates.push(s.rate / r);
      }
      // The same curve relative to the rate, at 40/s and at 4,000/s.
      expect(rates[0]).toBeGreaterThan(0.92);
      expect(rates[3]).toBeCloseTo(1, 6);
      expect(rates[4]).toBeGreaterThan(1);
      expect(rates[4]).toBeLessThan(1.01);
    },
  );

  it('goes back to costing nothing once a learned rate is forgotten', async () => {
    const s = setup();
    await warm(s, 10, 100);
    await s.limiter.onResponse(KEY, 429, {});
    await s.clock.advance(ADAPTIVE.memoryMs + 60_000);
    await s.limiter.acquire(KEY, 1_000);
    expect(s.limiter.active(KEY)).toBe(false);
    const calls = s.store.calls.length;
    await s.limiter.acquire(KEY, 1_000);
    expect(s.store.calls.length).toBe(calls);
  });

  it('keeps keys apart', async () => {
    const s = setup();
    await warm(s, 20, 50);
    await s.limiter.onResponse(KEY, 429, {});
    expect(s.limiter.active(KEY)).toBe(true);
    expect(s.limiter.active('https://other.example.com')).toBe(false);
  });
});

describe('RateLimiter against a simulated upstream with a 40 req/s quota', () => {
  const base = { quota: 40, demand: 80, seconds: 60, warmup: 10 };

  it('adaptive cuts the 429 ratio far below no limiter, keeping throughput near 40/s', async () => {
    const none = await simulate({ ...base, limiter: false });
    const adaptive = await simulate({ ...base, limiter: rateLimitDefaults });
    expect(none.throttleRatio).toBeGreaterThan(0.5);
    expect(adaptive.throttleRatio).toBeLessThan(0.05);
    expect(adaptive.throttleRatio).toBeLessThan(none.throttleRatio / 10);
    expect(adaptive.goodput).toBeGreaterThan(36);
    expect(adaptive.attempts).toBeLessThan(none.attempts / 3);
  });

  it('stays there when the upstream also sends Retry-After', async () => {
    const adaptive = await simulate({ ...base, limiter: rateLimitDefaults, retryAfter: 1_000 });
    expect(adaptive.throttleRatio).toBeLessThan(0.05);
    expect(adaptive.goodput).toBeGreaterThan(36);
  });

  it('a fixed bucket set just under the quota sees almost no 429', async () => {
    const fixed = resolveRateLimitOptions({ rps: 38 });
    if (!fixed) throw new Error('unreachable');
    const r = await simulate({ ...base, limiter: fixed });
    expect(r.throttled).toBe(0);
    expect(r.goodput).toBeGreaterThan(37);
  });
});

describe('rate store operations', () => {
  const cfg = { ...ADAPTIVE, rps: 10, burst: 2 };

  it('have stable names', () => {
    expect([rateAcquire.name, rateRefund.name, rateFeedback.name]).toEqual([
      'staunch.rate.acquire',
      'staunch.rate.refund',
      'staunch.rate.feedback',
    ]);
  });

  it('acquire on a fresh fixed key takes from a full bucket', () => {
    const r = rateAcquire.apply(undefined, { cfg, maxWait: null, epoch: null }, 1_000);
    expect(r.result).toEqual({ ok: true, wait: 0, epoch: 0, engaged: true, rate: 10 });
    expect(r.state).toEqual({
      tokens: 1,
      at: 1_000,
      epoch: 0,
      rate: 0,
      wMax: 0,
      lastDecrease: 0,
      meter: null,
      plateau: 0,
      ok: null,
      pausedAt: 0,
      before: 0,
      tally: [0, 0, 0, 0],
      low: 0,
      stated: 0,
      ceiling: 0,
    });
    expect(r.ttl).toBe(100 + 1_000);
  });

  it('acquire honours a reservation of the current epoch without taking another token', () => {
    const state = {
      ...(rateAcquire.apply(undefined, { cfg, maxWait: null, epoch: null }, 0).state as RateState),
      tokens: -3,
      at: 0,
      epoch: 4,
    };
    const r = rateAcquire.apply(state, { cfg, maxWait: 0, epoch: 4 }, 0);
    expect(r.result).toEqual({ ok: true, wait: 0, epoch: 4, engaged: true, rate: 10 });
    expect(r.state).toBe(state);
  });

  it('adaptive acquire on a key that never engaged writes nothing', () => {
    const r = rateAcquire.apply(
      undefined,
      { cfg: { ...cfg, rps: null, burst: null }, maxWait: null, epoch: null },
      0,
    );
    expect(r).toEqual({
      state: undefined,
      ttl: 0,
      result: { ok: true, wait: 0, epoch: 0, engaged: false, rate: 0 },
    });
  });
});

describe('RateLimiter properties', () => {
  it('fixed: grants come in call order and never faster than burst + rps × time', async () => {
    const step = fc.record({
      gap: fc.integer({ min: 0, max: 400 }),
      maxWait: fc.integer({ min: 0, max: 3_000 }),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.double({ min: 1, max: 50, noNaN: true }),
        fc.integer({ min: 1, max: 5 }),
        fc.array(step, { minLength: 1, maxLength: 60, size: 'max' }),
        async (rps, burst, steps) => {
          const clock = fakeClock();
          const limiter = new RateLimiter({ mode: 'fixed', rps, burst }, memoryStore(), clock);
          const granted: Array<{ seq: number; at: number }> = [];
          const pending: Promise<unknown>[] = [];
          for (const [seq, { gap, maxWait }] of steps.entries()) {
            await flush();
            await clock.advance(gap);
            pending.push(
              limiter.acquire(KEY, maxWait).then((d) => {
                if (d.ok) granted.push({ seq, at: clock.now() });
              }),
            );
          }
          const stop = clock.autoAdvance();
          await Promise.all(pending);
          stop();
          for (let i = 1; i < granted.length; i++) {
            if (granted[i]!.seq < granted[i - 1]!.seq)
              throw new Error(`out of order: ${JSON.stringify(granted)}`);
          }
          for (let i = 0; i < granted.length; i++) {
            for (let j = i; j < granted.length; j++) {
              const span = granted[j]!.at - granted[i]!.at;
              const allowed = burst + (rps * (span + 1)) / 1_000 + 1e-9;
              if (j - i + 1 > allowed)
                throw new Error(`${j - i + 1} grants in ${span} ms, allowed ${allowed}`);
            }
          }
        },
      ),
      { numRuns: 150 },
    );
  });
});

describe('RateLimiter, a fleet on one store', () => {
  it("processes joining within the hold-off add their share: the key stands at the fleet's rate", async () => {
    const clock = fakeClock();
    const store = memoryStore();
    const fleet = Array.from({ length: 4 }, () => new RateLimiter(rateLimitDefaults, store, clock));
    const [a, b, c, d] = fleet as [RateLimiter, RateLimiter, RateLimiter, RateLimiter];
    // Each sends 20/s for 4 s, all accepted: the fleet sends 80/s.
    for (let i = 0; i < 80; i++) {
      for (const l of fleet) {
        const sentAt = clock.now();
        await l.acquire(KEY, 1_000);
        await l.onResponse(KEY, 200, { sentAt });
      }
      await clock.advance(50);
    }
    const peek = () => store.peek(RATE_KEY_PREFIX + KEY, clock.now()) as RateState;
    // a is throttled first: it engages the shared key from its own estimate, one process's 20/s.
    await a.onResponse(KEY, 429, { sentAt: clock.now() - 5 });
    expect(peek().rate).toBeCloseTo(20, 0);
    // b and c, throttled within the hold-off, each add their accepted rate (20/s) to the rate
    // and their send rate to wMax.
    await clock.advance(100);
    await b.onResponse(KEY, 429, { sentAt: clock.now() - 5 });
    expect(peek().rate).toBeCloseTo(40, 0);
    await clock.advance(100);
    await c.onResponse(KEY, 429, { sentAt: clock.now() - 5 });
    const joined = peek();
    expect(joined.rate).toBeCloseTo(60, 0);
    expect(joined.wMax).toBeCloseTo(60, 0);
    expect(b.active(KEY) && c.active(KEY)).toBe(true);
    // After the hold-off the key answers for the fleet already: d's first 429 only raises it
    // to the fleet's accepted rate plus its own, and never lowers it.
    await clock.advance(1_000);
    const before = peek().rate;
    await d.onResponse(KEY, 429, { sentAt: clock.now() - 5 });
    expect(peek().rate).toBeGreaterThanOrEqual(before);
    expect(peek().rate).toBeLessThan(before + 20);
    expect(d.active(KEY)).toBe(true);
  });
});

describe('rateFeedback, a fleet joining an engaged key', () => {
  const cfg = { ...ADAPTIVE, rps: null, burst: null };
  /** A 429 of one process sending (and accepted at) 20/s. */
  const throttle = (sentAt: number, over: { joining?: true } = {}) => ({
    cfg,
    signal: 'throttle' as const,
    pauseUntil: null,
    measured: 20,
    accepted: 20,
    fraction: 0.1,
    sentAt,
    ...over,
  });

  it('a refusal noted before the others joined does not set the next cut', () => {
    const t0 = 1_000_000;
    // Four processes at 20/s each: the first 429 engages the key at one process's rate.
    let s = rateFeedback.apply(undefined, throttle(t0), t0).state as RateState;
    expect(s.rate).toBeCloseTo(20, 6);
    // A request that process sent after the engagement is refused too (within the hold-off:
    // no cut, but the rate it went at, ~20/s, is noted as one that drew a 429).
    s = rateFeedback.apply(s, throttle(t0 + 50), t0 + 100).state as RateState;
    expect(s.rate).toBeCloseTo(20, 6);
    // The other three join with their own first 429s: the key stands at the fleet's 80/s, and
    // the fleet's sends go through it (its meter reads 80/s).
    for (const at of [t0 + 150, t0 + 200, t0 + 250]) {
      s = rateFeedback.apply(s, throttle(at - 5, { joining: true }), at).state as RateState;
    }
    expect(s.rate).toBeCloseTo(80, 6);
    s = { ...s, meter: [t0 + 2_000, 0, 80] };
    // After the hold-off a 429 cuts: by beta from the fleet's rate, not from the 20/s noted
    // before the joins (which would land at the floor, this process's 20/s accepted).
    const at = t0 + cfg.holdoffMs + 300;
    const cut = rateFeedback.apply(s, throttle(at - 5), at).state as RateState;
    expect(cut.rate).toBeLessThan(s.rate);
    expect(cut.rate).toBeGreaterThanOrEqual(cfg.beta * 80 * 0.95);
  });

  it('a cut in the middle of a meter bucket reads the rate sent so far in it', () => {
    const bucket = 1_000_000;
    const at = bucket + 280;
    // The fleet's joins took the key to 246/s within the last bucket: the closed buckets read
    // 90/s, the one in progress holds 62 sends in its first 280 ms (221/s). A request sent at
    // 219/s was refused since the last cut.
    const s: RateState = {
      ...(rateFeedback.apply(undefined, throttle(bucket - 1_500), bucket - 1_500)
        .state as RateState),
      rate: 246,
      wMax: 246,
      plateau: bucket - 200,
      meter: [bucket, 62, 90],
      ok: [bucket, 0, 86],
      low: 219,
    };
    const cut = rateFeedback.apply(s, throttle(at - 5), at).state as RateState;
    // By beta from the 219/s refused (the fleet sent 221/s): not from 62 sends over a whole
    // 500 ms bucket (124/s), which cut to 105/s under a 200/s quota.
    expect(cut.rate).toBeCloseTo(cfg.beta * 219, 6);
  });
});

describe('RateLimiter, a rate the server states', () => {
  it('a spent quota with a stated refill rate engages at it and pauses only until the next fits', async () => {
    const clock = fakeClock();
    const store = memoryStore();
    const limiter = new RateLimiter(rateLimitDefaults, store, clock);
    // A burst of 40 in one instant, the last answered "0 left, full in 20 s", 40 per 20 s: 2/s.
    for (let i = 0; i < 40; i++) await limiter.acquire(KEY, 1_000);
    await limiter.onResponse(KEY, 200, { remaining: 0, reset: 20_000, rate: 2, sentAt: 0 });
    const s = store.peek(RATE_KEY_PREFIX + KEY, clock.now()) as RateState;
    expect(s.rate).toBe(2);
    expect(s.stated).toBe(2);
    // Paused until one request fits (500 ms), not the 20 s to full.
    expect(s.at - clock.now()).toBe(500);
    const go = limiter.acquire(KEY, 10_000);
    await flush();
    await clock.advance(500);
    expect(await go).toEqual({ ok: true, waited: 500 });
  });

  it('the learned rate grows back to the stated rate and never past it', async () => {
    const clock = fakeClock();
    const store = memoryStore();
    const limiter = new RateLimiter(rateLimitDefaults, store, clock);
    // 20/s, all accepted, for 2 s; then a 429 engages the key near 20/s.
    for (let i = 0; i < 40; i++) {
      const sentAt = clock.now();
      await limiter.acquire(KEY, 1_000);
      await limiter.onResponse(KEY, 200, { sentAt });
      await clock.advance(50);
    }
    await limiter.onResponse(KEY, 429, { sentAt: clock.now() - 5 });
    expect((store.peek(RATE_KEY_PREFIX + KEY, clock.now()) as RateState).rate).toBeGreaterThan(15);
    // Then every answer states a refill rate of 12/s with room left: the rate comes down to it
    // at once, and 10 s of successes at the limiter's pace do not raise it past it.
    let highest = 0;
    const until = clock.now() + 10_000;
    while (clock.now() < until) {
      let granted = false;
      void limiter.acquire(KEY, 10_000).then(() => {
        granted = true;
      });
      while (!granted) {
        await flush();
        await clock.advance(5);
      }
      await limiter.onResponse(KEY, 200, { remaining: 5, rate: 12, sentAt: clock.now() });
      const s = store.peek(RATE_KEY_PREFIX + KEY, clock.now()) as RateState;
      highest = Math.max(highest, s.rate);
    }
    expect(highest).toBe(12);
    expect((store.peek(RATE_KEY_PREFIX + KEY, clock.now()) as RateState).wMax).toBeLessThanOrEqual(
      12,
    );
  });
});

describe('RateLimiter, engaging in the release of a backlog', () => {
  const run = async (released: boolean) => {
    const clock = fakeClock();
    const store = memoryStore();
    const limiter = new RateLimiter(rateLimitDefaults, store, clock);
    const send = async (status: number) => {
      const sentAt = clock.now();
      await limiter.acquire(KEY, 1_000);
      await limiter.onResponse(KEY, status, { sentAt });
    };
    // 20/s for 2 s, then 3.3 s of nothing (the breaker held every request).
    for (let i = 0; i < 40; i++) {
      await send(200);
      await clock.advance(50);
    }
    await clock.advance(3_300);
    // The backlog goes at 100/s for 300 ms, across a meter bucket's end, all accepted.
    for (let i = 0; i < 30; i++) {
      await send(200);
      await clock.advance(10);
    }
    await limiter.onResponse(KEY, 429, { sentAt: clock.now() - 5, released });
    return (store.peek(RATE_KEY_PREFIX + KEY, clock.now()) as RateState).rate;
  };

  it('engages at the backlog’s own recent pace, not at meters the outage silenced', async () => {
    // The 500 ms meters say about 32/s (their buckets before the burst were empty); the
    // burst's pace over the last few hundred ms (a 250 ms time constant) about 68/s.
    const rate = await run(true);
    expect(rate).toBeGreaterThan(60);
    expect(rate).toBeLessThan(100);
  });

  it('outside a release the meters alone decide: a burst is not taken for a rate', async () => {
    expect(await run(false)).toBeLessThan(40);
  });

  it('an engaged key is not cut below what the release was just accepted at', async () => {
    const cutTo = async (released: boolean) => {
      const clock = fakeClock();
      const store = memoryStore();
      const limiter = new RateLimiter(rateLimitDefaults, store, clock);
      const send = async (status: number, flag = false) => {
        const sentAt = clock.now();
        await limiter.acquire(KEY, 10_000);
        await limiter.onResponse(KEY, status, { sentAt, released: flag });
      };
      // 50/s for 2 s, then a 429: the key engages near 50/s.
      for (let i = 0; i < 100; i++) {
        await send(200);
        await clock.advance(20);
      }
      await send(429);
      // 3 s of outage (nothing sent), then the backlog at 50/s for 400 ms, all accepted, the
      // 429 just as a meter bucket closes (the one in progress then holds nothing to read).
      await clock.advance(3_100);
      for (let i = 0; i < 20; i++) {
        await send(200);
        await clock.advance(20);
      }
      await send(429, released);
      return (store.peek(RATE_KEY_PREFIX + KEY, clock.now()) as RateState).rate;
    };
    // In the release the floor is what it was just accepted at (about 40/s, a 250 ms time
    // constant after 400 ms; the cut lands at 36/s); outside one, the 500 ms meters, which
    // the silence deflated (32/s).
    const inRelease = await cutTo(true);
    const outside = await cutTo(false);
    expect(inRelease).toBeGreaterThan(35);
    expect(outside).toBeLessThan(inRelease * 0.9);
  });
});
