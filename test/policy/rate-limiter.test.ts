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
} from '../../src/policy/rate-limiter.js';
import {
  type RateState,
  rateAcquire,
  rateFeedback,
  rateRefund,
} from '../../src/policy/rate-ops.js';
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

/** Sends `n` requests `every` ms apart through an inactive adaptive limiter (measures the rate). */
async function warm(s: ReturnType<typeof setup>, n: number, every: number) {
  for (let i = 0; i < n; i++) {
    await s.limiter.acquire(KEY, 1_000);
    await s.clock.advance(every);
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
    [{ rps: 10, perMinute: 1 }, TypeError, 'rateLimit has unknown option "perMinute"'],
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
    expect(await s.limiter.acquire(KEY, 0)).toEqual({ ok: true });
    expect(await s.limiter.acquire(KEY, 500)).toEqual({ ok: false, retryAfter: 1_000 });
    expect(s.clock.sleeps).toEqual([]);
    void s.track('c', 1_000);
    await s.run(1_000);
    expect(s.clock.sleeps).toEqual([1_000]);
    expect(s.log).toEqual([{ name: 'c', at: 1_000, decision: { ok: true } }]);
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

  it("a 429's Retry-After pauses every waiter of the key, which then resume in order", async () => {
    const s = setup({ rps: 10, burst: 1 });
    for (const name of ['a', 'b', 'c', 'd']) void s.track(name);
    await s.run(50);
    await s.limiter.onResponse(KEY, 429, { retryAfter: 1_000 });
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
    await s.limiter.onResponse(KEY, 429, { retryAfter: 1_000 });
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
    for (let i = 0; i < 100; i++) expect(await s.limiter.acquire(KEY, 0)).toEqual({ ok: true });
    await s.limiter.onResponse(KEY, 200, { remaining: 5 });
    await s.limiter.onResponse(KEY, 503, { retryAfter: 1_000 });
    expect(s.store.calls).toEqual([]);
    expect(s.clock.sleeps).toEqual([]);
    expect(s.limiter.active(KEY)).toBe(false);
  });

  it('engages on a 429 at beta × the measured send rate', async () => {
    const s = setup();
    await warm(s, 200, 20); // 50 requests per second for 4 s
    await s.limiter.onResponse(KEY, 429, {});
    expect(s.limiter.active(KEY)).toBe(true);
    const state = s.state();
    expect(state?.wMax).toBeCloseTo(50, 0);
    expect(state?.rate).toBeCloseTo(ADAPTIVE.beta * 50, 0);
  });

  it('engages on a response saying the quota is at zero', async () => {
    const s = setup();
    await warm(s, 10, 100);
    await s.limiter.onResponse(KEY, 200, { remaining: 0 });
    expect(s.limiter.active(KEY)).toBe(true);
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

  it("a 429's Retry-After pauses every request of the key, waiting or new", async () => {
    const s = setup();
    await warm(s, 200, 20);
    await s.limiter.onResponse(KEY, 429, {});
    s.mark();
    for (const name of ['a', 'b', 'c']) void s.track(name);
    await flush();
    await s.limiter.onResponse(KEY, 429, { retryAfter: 2_000 });
    void s.track('d');
    await s.run(10_000);
    expect(s.log.map((l) => l.name)).toEqual(['a', 'b', 'c', 'd']);
    // Every waiter was re-queued behind the pause, then paced at the (lowered) rate.
    const at = s.log.map((l) => l.at);
    expect(at[0]).toBe(2_000);
    expect(at).toEqual([...at].sort((x, y) => x - y));
    expect(new Set(at).size).toBe(4);
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

  it('grows back along the CUBIC curve on success, capped at twice the measured rate', async () => {
    const s = setup();
    await warm(s, 200, 20);
    await s.limiter.onResponse(KEY, 429, {});
    const { wMax } = s.state()!;
    const k = Math.cbrt((wMax * (1 - ADAPTIVE.beta)) / ADAPTIVE.scale);
    // Keep sending at about the learned rate so the measured rate stays up.
    const stop = s.clock.autoAdvance();
    const started = s.clock.now();
    while (s.clock.now() - started < k * 1_000) {
      await s.limiter.acquire(KEY, 10_000);
      await s.limiter.onResponse(KEY, 200, {});
    }
    stop();
    const at = (s.clock.now() - s.state()!.lastDecrease) / 1_000;
    expect(s.state()?.rate).toBeCloseTo(ADAPTIVE.scale * (at - k) ** 3 + wMax, 0);
    // Idle time neither grows the rate (twice the measured rate caps it) nor lowers it.
    const before = s.state()?.rate;
    await s.clock.advance(30_000);
    await s.limiter.onResponse(KEY, 200, {});
    expect(s.state()?.rate).toBe(before);
  });

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
    });
    expect(r.ttl).toBe(100 + 1_000);
  });

  it('acquire honours a reservation of the current epoch without taking another token', () => {
    const state = { tokens: -3, at: 0, epoch: 4, rate: 0, wMax: 0, lastDecrease: 0, meter: null };
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
  it('a second process joining an engaged key leaves the shared rate as it is instead of lowering it', async () => {
    const clock = fakeClock();
    const store = memoryStore();
    const a = new RateLimiter(rateLimitDefaults, store, clock);
    const b = new RateLimiter(rateLimitDefaults, store, clock);
    // Both send 50/s for 4 s; a is throttled first and engages the shared key.
    for (let i = 0; i < 200; i++) {
      await a.acquire(KEY, 1_000);
      await b.acquire(KEY, 1_000);
      await clock.advance(20);
    }
    await a.onResponse(KEY, 429, {});
    const engaged = store.peek(RATE_KEY_PREFIX + KEY, clock.now()) as RateState;
    expect(engaged.rate).toBeCloseTo(ADAPTIVE.beta * 50, 0);
    // Past the hold-off (b still sending at 50/s, unpaced), b's first 429 joins.
    for (let i = 0; i < 60; i++) {
      await b.acquire(KEY, 1_000);
      await clock.advance(20);
    }
    await b.onResponse(KEY, 429, { sentAt: clock.now() - 5 });
    const joined = store.peek(RATE_KEY_PREFIX + KEY, clock.now()) as RateState;
    expect(joined.rate).toBe(engaged.rate);
    expect(joined.wMax).toBe(engaged.wMax);
    expect(b.active(KEY)).toBe(true);
    // A later 429 from b, now pacing, is news: the rate goes down.
    await clock.advance(ADAPTIVE.holdoffMs + 10);
    await b.onResponse(KEY, 429, { sentAt: clock.now() - 5 });
    const lowered = store.peek(RATE_KEY_PREFIX + KEY, clock.now()) as RateState;
    expect(lowered.rate).toBeLessThan(joined.rate);
  });
});
