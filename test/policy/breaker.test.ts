import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type BreakerOptions,
  type BreakerStateChange,
  type BreakerTicket,
  breakerDefaults,
  CircuitBreaker,
  type CircuitState,
  PROBE_LEASE_GRACE,
  type ResolvedBreakerOptions,
  resolveBreakerOptions,
} from '../../src/policy/breaker/breaker.js';
import { breakerAdmit, breakerRecord, PROBE_TURN_MS } from '../../src/policy/breaker/ops.js';
import { memoryStore } from '../../src/store/memory.js';
import type { StateStore } from '../../src/store/store.js';
import { fakeClock } from '../helpers/clock.js';
import { asyncStore } from './support.js';

const KEY = 'https://api.example.com';

function setup(options: BreakerOptions = {}, wrap: (s: StateStore) => StateStore = (s) => s) {
  const clock = fakeClock();
  const store = memoryStore();
  const changes: Array<[CircuitState, CircuitState]> = [];
  const resolved = resolveBreakerOptions(options);
  if (resolved === false) throw new Error('unreachable');
  const breaker = new CircuitBreaker(resolved, wrap(store), clock, (e) =>
    changes.push([e.from, e.to]),
  );
  const call = async (outcome: 'success' | 'failure' | 'neutral' | 'cancelled', lease = 30_000) => {
    const admission = await breaker.admit(KEY, lease);
    if (!admission.ok) return admission;
    await breaker.record(KEY, admission.ticket, outcome);
    return admission;
  };
  const ticket = async (lease = 30_000): Promise<BreakerTicket> => {
    const admission = await breaker.admit(KEY, lease);
    if (!admission.ok) throw new Error(`not admitted, retryAfter ${admission.retryAfter}`);
    return admission.ticket;
  };
  const trip = async () => {
    for (let i = 0; i < resolved.minimumVolume; i++) await call('failure');
  };
  return { clock, store, breaker, changes, call, ticket, trip, options: resolved };
}

describe('resolveBreakerOptions', () => {
  it('gives the defaults for true and undefined, false for false', () => {
    expect(resolveBreakerOptions(undefined)).toBe(breakerDefaults);
    expect(resolveBreakerOptions(true)).toBe(breakerDefaults);
    expect(resolveBreakerOptions(false)).toBe(false);
    expect(breakerDefaults).toEqual({
      failureRatio: 0.5,
      minimumVolume: 20,
      window: 10_000,
      breakDuration: 5_000,
      maxBreakDuration: 60_000,
      halfOpenProbes: 1,
      consecutiveFailures: undefined,
      probeInterval: 250,
      failFast: false,
      maxWaiting: 100_000,
    });
  });

  it('takes maxWaiting as an integer >= 0 or Infinity', () => {
    for (const maxWaiting of [0, 1, 250, Number.POSITIVE_INFINITY]) {
      expect(resolveBreakerOptions({ maxWaiting })).toEqual({ ...breakerDefaults, maxWaiting });
    }
  });

  it('fills the gaps with defaults, drops undefined and freezes', () => {
    const r = resolveBreakerOptions({
      failureRatio: 0.25,
      window: undefined,
      consecutiveFailures: 3,
    });
    expect(r).toEqual({ ...breakerDefaults, failureRatio: 0.25, consecutiveFailures: 3 });
    expect(Object.isFrozen(r)).toBe(true);
  });

  it('raises maxBreakDuration to a longer breakDuration when it is not given', () => {
    const r = resolveBreakerOptions({ breakDuration: 120_000 });
    expect((r as ResolvedBreakerOptions).maxBreakDuration).toBe(120_000);
  });

  it.each<[unknown, ErrorConstructor, string]>([
    [{ failureRatio: 1.5 }, RangeError, 'breaker.failureRatio must be a number in (0, 1], got 1.5'],
    [{ failureRatio: 0 }, RangeError, 'breaker.failureRatio must be a number in (0, 1], got 0'],
    [
      { failureRatio: Number.NaN },
      TypeError,
      'breaker.failureRatio must be a number in (0, 1], got NaN',
    ],
    [
      { failureRatio: '0.5' },
      TypeError,
      'breaker.failureRatio must be a number in (0, 1], got "0.5"',
    ],
    [{ minimumVolume: 0 }, RangeError, 'breaker.minimumVolume must be an integer >= 1, got 0'],
    [{ minimumVolume: 2.5 }, RangeError, 'got 2.5'],
    [{ window: 0 }, RangeError, 'breaker.window must be a finite number of ms > 0, got 0'],
    [{ window: Number.POSITIVE_INFINITY }, RangeError, 'got Infinity'],
    [{ breakDuration: -1 }, RangeError, 'breaker.breakDuration'],
    [
      { maxBreakDuration: 1_000 },
      RangeError,
      'breaker.maxBreakDuration must be >= breaker.breakDuration (5000), got 1000',
    ],
    [{ halfOpenProbes: 0 }, RangeError, 'breaker.halfOpenProbes must be an integer >= 1, got 0'],
    [
      { consecutiveFailures: 0 },
      RangeError,
      'breaker.consecutiveFailures must be an integer >= 1, got 0',
    ],
    [{ consecutiveFailures: null }, TypeError, 'got null'],
    [
      { probeInterval: 0 },
      RangeError,
      'breaker.probeInterval must be a finite number of ms > 0, got 0',
    ],
    [{ failFast: 'yes' }, TypeError, 'breaker.failFast must be a boolean, got "yes"'],
    [
      { maxWaiting: -1 },
      RangeError,
      'breaker.maxWaiting must be an integer >= 0 or Infinity, got -1',
    ],
    [
      { maxWaiting: 2.5 },
      RangeError,
      'breaker.maxWaiting must be an integer >= 0 or Infinity, got 2.5',
    ],
    [
      { maxWaiting: Number.NaN },
      TypeError,
      'breaker.maxWaiting must be an integer >= 0 or Infinity, got NaN',
    ],
    [
      { maxWaiting: '100' },
      TypeError,
      'breaker.maxWaiting must be an integer >= 0 or Infinity, got "100"',
    ],
    [
      { failureRate: 0.5 },
      TypeError,
      'breaker.failureRate is not an option (expected one of: failureRatio,',
    ],
    [{ a: 1, b: 2 }, TypeError, 'breaker.a is not an option'],
    ['on', TypeError, 'breaker must be an object, got "on"'],
    [null, TypeError, 'breaker must be an object, got null'],
  ])('rejects %o', (input, type, message) => {
    const run = () => resolveBreakerOptions(input as BreakerOptions);
    expect(run).toThrow(type);
    expect(run).toThrow(message);
  });
});

describe('CircuitBreaker, closed', () => {
  it('admits while closed and writes nothing for an admit alone', async () => {
    const { breaker, store } = setup();
    const admission = await breaker.admit(KEY, 1_000);
    expect(admission).toEqual({ ok: true, ticket: { gen: 0, probe: null } });
    expect(store.size).toBe(0);
  });

  it('never trips below minimumVolume, even at 100% failures', async () => {
    const { call, breaker, changes } = setup();
    for (let i = 0; i < 19; i++) await call('failure');
    expect((await breaker.admit(KEY, 1_000)).ok).toBe(true);
    expect(changes).toEqual([]);
  });

  it('trips at minimumVolume once failures reach the ratio, and then fails fast', async () => {
    const { call, breaker, changes, clock } = setup();
    for (let i = 0; i < 10; i++) await call('success');
    for (let i = 0; i < 9; i++) await call('failure');
    expect(changes).toEqual([]);
    await call('failure'); // 10 / 20 = 0.5
    expect(changes).toEqual([['closed', 'open']]);
    expect(await breaker.admit(KEY, 1_000)).toEqual({ ok: false, retryAfter: 5_000 });
    await clock.advance(1_200);
    expect(await breaker.admit(KEY, 1_000)).toEqual({ ok: false, retryAfter: 3_800 });
  });

  it.each([
    [11, 9, false],
    [10, 10, true],
    [0, 20, true],
    [30, 29, false],
    [29, 30, true],
  ])('with %d successes then %d failures, trips: %s', async (ok, failed, trips) => {
    const { call, changes } = setup();
    for (let i = 0; i < ok; i++) await call('success');
    for (let i = 0; i < failed; i++) await call('failure');
    expect(changes.length > 0).toBe(trips);
  });

  it('does not count neutral or cancelled outcomes, nor touch the store for them', async () => {
    const { call, changes, store } = setup();
    for (let i = 0; i < 100; i++) await call('neutral');
    for (let i = 0; i < 100; i++) await call('cancelled');
    expect(store.size).toBe(0);
    for (let i = 0; i < 19; i++) await call('failure');
    expect(changes).toEqual([]);
  });

  it('forgets what slid out of the window', async () => {
    const { call, changes, clock } = setup();
    for (let i = 0; i < 15; i++) await call('failure');
    await clock.advance(10_000);
    for (let i = 0; i < 15; i++) await call('failure');
    expect(changes).toEqual([]);
    for (let i = 0; i < 5; i++) await call('failure');
    expect(changes).toEqual([['closed', 'open']]);
  });

  it('counts calls spread over the window, bucket by bucket', async () => {
    const { call, changes, clock } = setup();
    for (let i = 0; i < 19; i++) {
      await call('failure');
      await clock.advance(450); // 19 failures over 8.55 s: all still in the 10 s window
    }
    await call('failure');
    expect(changes).toEqual([['closed', 'open']]);
  });

  it('in consecutive mode trips after n failures in a row, whatever the volume', async () => {
    const { call, changes } = setup({ consecutiveFailures: 3 });
    await call('failure');
    await call('failure');
    await call('success');
    await call('failure');
    await call('failure');
    await call('neutral'); // neither breaks nor extends the streak
    expect(changes).toEqual([]);
    await call('failure');
    expect(changes).toEqual([['closed', 'open']]);
  });

  it('ignores the outcome of a call admitted before the circuit last opened', async () => {
    const { call, trip, clock, ticket, breaker, changes } = setup({ minimumVolume: 2 });
    const stale = await ticket();
    await trip();
    await clock.advance(5_000);
    await call('success'); // the probe closes it
    expect(changes.at(-1)).toEqual(['half-open', 'closed']);
    await breaker.record(KEY, stale, 'failure');
    await call('failure'); // one failure of this generation: below the volume of 2
    expect(changes.at(-1)).toEqual(['half-open', 'closed']);
  });
});

describe('CircuitBreaker, open and half-open', () => {
  it('lets exactly one probe through after the break, and fires each transition once', async () => {
    const { trip, clock, breaker, changes, ticket } = setup();
    await trip();
    await clock.advance(5_000);
    const probe = await ticket(2_000);
    expect(probe.probe).not.toBeNull();
    expect(changes).toEqual([
      ['closed', 'open'],
      ['open', 'half-open'],
    ]);
    expect(await breaker.admit(KEY, 2_000)).toEqual({
      ok: false,
      retryAfter: 2_000 + PROBE_LEASE_GRACE,
    });
    await breaker.record(KEY, probe, 'success');
    expect(changes.at(-1)).toEqual(['half-open', 'closed']);
    expect(changes).toHaveLength(3);
    expect((await breaker.admit(KEY, 1_000)).ok).toBe(true);
  });

  it('admits exactly halfOpenProbes probes out of many concurrent admits, with an async store', async () => {
    const { trip, clock, breaker } = setup({ halfOpenProbes: 3, minimumVolume: 5 }, asyncStore);
    await trip();
    await clock.advance(5_000);
    const admissions = await Promise.all(
      Array.from({ length: 50 }, () => breaker.admit(KEY, 1_000)),
    );
    expect(admissions.filter((a) => a.ok)).toHaveLength(3);
  });

  it.each(['success', 'neutral'] as const)(
    'a probe %s closes and resets the window and break',
    async (outcome) => {
      const { trip, clock, breaker, changes, call } = setup();
      await trip();
      await clock.advance(5_000);
      await call(outcome);
      expect(changes.at(-1)).toEqual(['half-open', 'closed']);
      for (let i = 0; i < 19; i++) await call('failure');
      expect(changes.at(-1)).toEqual(['half-open', 'closed']);
      await call('failure');
      expect(await breaker.admit(KEY, 1_000)).toEqual({ ok: false, retryAfter: 5_000 });
    },
  );

  it('a failed probe reopens with the break doubled, up to maxBreakDuration', async () => {
    const { trip, clock, breaker, call } = setup();
    await trip();
    const breaks: number[] = [];
    for (let i = 0; i < 6; i++) {
      const closed = await breaker.admit(KEY, 1_000);
      if (closed.ok) throw new Error('should be open');
      breaks.push(closed.retryAfter);
      await clock.advance(closed.retryAfter);
      await call('failure');
    }
    expect(breaks).toEqual([5_000, 10_000, 20_000, 40_000, 60_000, 60_000]);
  });

  it('a cancelled probe frees its slot and leaves the circuit half-open', async () => {
    const { trip, clock, breaker, changes, ticket } = setup();
    await trip();
    await clock.advance(5_000);
    const first = await ticket();
    await breaker.record(KEY, first, 'cancelled');
    const second = await ticket();
    expect(second.probe).not.toBe(first.probe);
    expect(changes.at(-1)).toEqual(['open', 'half-open']);
  });

  it('a probe that never reports frees its slot when its lease expires; its late report is ignored', async () => {
    const { trip, clock, breaker, changes, ticket } = setup();
    await trip();
    await clock.advance(5_000);
    const lost = await ticket(1_000);
    await clock.advance(1_000 + PROBE_LEASE_GRACE - 1);
    expect((await breaker.admit(KEY, 1_000)).ok).toBe(false);
    await clock.advance(1);
    const next = await ticket(1_000);
    await breaker.record(KEY, lost, 'failure');
    expect(changes.at(-1)).toEqual(['open', 'half-open']);
    await breaker.record(KEY, next, 'success');
    expect(changes.at(-1)).toEqual(['half-open', 'closed']);
  });

  it('uses maxBreakDuration as the lease when the executor has no attempt timeout', async () => {
    const { trip, clock, breaker, ticket } = setup();
    await trip();
    await clock.advance(5_000);
    await ticket(Number.POSITIVE_INFINITY);
    expect(await breaker.admit(KEY, 1_000)).toEqual({
      ok: false,
      retryAfter: 60_000 + PROBE_LEASE_GRACE,
    });
  });

  it('a throwing listener breaks nothing', async () => {
    const clock = fakeClock();
    const resolved = resolveBreakerOptions({ minimumVolume: 1 });
    if (!resolved) throw new Error('unreachable');
    let calls = 0;
    const breaker = new CircuitBreaker(resolved, memoryStore(), clock, () => {
      calls++;
      throw new Error('listener bug');
    });
    const a = await breaker.admit(KEY, 1_000);
    if (!a.ok) throw new Error('unreachable');
    expect(() => breaker.record(KEY, a.ticket, 'failure')).not.toThrow();
    await clock.advance(5_000);
    const probe = await breaker.admit(KEY, 1_000);
    expect(probe.ok).toBe(true);
    expect(calls).toBe(2);
  });

  it('keeps keys apart', async () => {
    const { trip, breaker } = setup();
    await trip();
    expect((await breaker.admit(KEY, 1_000)).ok).toBe(false);
    expect((await breaker.admit('https://other.example.com', 1_000)).ok).toBe(true);
  });
});

describe('breaker store operations', () => {
  const cfg = {
    failureRatio: 0.5,
    minimumVolume: 2,
    window: 10_000,
    breakDuration: 5_000,
    maxBreakDuration: 60_000,
    halfOpenProbes: 1,
    consecutiveFailures: 0,
    probeInterval: 1_000,
  };

  it('have stable names', () => {
    expect([breakerAdmit.name, breakerRecord.name]).toEqual([
      'staunch.breaker.admit',
      'staunch.breaker.record',
    ]);
  });

  it('are pure: the input state is not changed', () => {
    const record = (state: Parameters<typeof breakerRecord.apply>[0], now: number) =>
      breakerRecord.apply(state, { cfg, gen: 0, probe: null, outcome: 'failure' }, now);
    const one = record(undefined, 1_000).state;
    const frozen = JSON.stringify(one);
    const two = record(one, 1_001);
    expect(JSON.stringify(one)).toBe(frozen);
    expect(two.result).toEqual({ change: ['closed', 'open'] });
    expect(two.state).toMatchObject({ state: 'open', openUntil: 6_001, breakMs: 5_000 });
    expect(two.ttl).toBe(5_000 + 60_000);
  });

  it('trip on the newest bucket alone: a hard outage after a healthy spell', () => {
    let state: Parameters<typeof breakerRecord.apply>[0];
    const record = (outcome: 'success' | 'failure', now: number) => {
      const r = breakerRecord.apply(state, { cfg, gen: 0, probe: null, outcome }, now);
      state = r.state;
      return r.result.change;
    };
    // 9 s of successes fill the 10 s window: 90 of them.
    for (let t = 0; t < 9_000; t += 100) expect(record('success', t)).toBeNull();
    // Then every call fails: the window's ratio stays under 0.5 for seconds, but the newest
    // 1 s bucket holds only failures once minimumVolume (2) of them are in.
    expect(record('failure', 9_000)).toBeNull();
    expect(record('failure', 9_010)).toEqual(['closed', 'open']);
  });

  it('while several wait, the break is a tenth of the outage so far (50 ms to probeInterval); a lone waiter gets probeInterval', () => {
    type State = Parameters<typeof breakerRecord.apply>[0];
    // Trip at t = 10 000 (minimumVolume 2): the outage starts there.
    let state: State = breakerRecord.apply(
      undefined,
      { cfg, gen: 0, probe: null, outcome: 'failure' },
      10_000,
    ).state;
    state = breakerRecord.apply(
      state,
      { cfg, gen: 0, probe: null, outcome: 'failure' },
      10_000,
    ).state;
    expect(state).toMatchObject({ state: 'open', openedAt: 10_000, openUntil: 15_000 });
    const waiter = (s: State, now: number, quick: boolean) =>
      breakerAdmit.apply(s, { cfg, leaseMs: 1_000, waitMs: 5_000, ...(quick && { quick }) }, now);
    // Several waiting: the 5 s break is cut to 50 ms at once, a lone waiter's to 1 s.
    expect(waiter(state, 10_010, true).state).toMatchObject({ openUntil: 10_060 });
    expect(waiter(state, 10_010, false).state).toMatchObject({ openUntil: 11_010 });
    // The break over (at 15 000, 5 s into the outage), a probe goes and fails, others still
    // waiting: the next in 500 ms; alone, in probeInterval (1 s).
    const probeFails = (from: State, at: number, quick: boolean) => {
      const admitted = breakerAdmit.apply(from, { cfg, leaseMs: 1_000 }, at);
      const { probe } = admitted.result as { probe: number };
      expect(probe).not.toBeNull();
      const args = { cfg, gen: 0, probe, outcome: 'failure' as const, ...(quick && { quick }) };
      return breakerRecord.apply(admitted.state, args, at).state;
    };
    const waiting = waiter(state, 10_010, true).state;
    const open5s = { ...(waiting as object), openUntil: 15_000 } as State;
    expect(probeFails(open5s, 15_000, true)).toMatchObject({ openUntil: 15_500, openedAt: 10_000 });
    expect(probeFails(open5s, 15_000, false)).toMatchObject({ openUntil: 16_000 });
    // 20 s into it (waiters still there): capped at probeInterval.
    const later = waiter(open5s, 14_000, true).state;
    const open20s = { ...(later as object), openUntil: 30_000, waitUntil: 60_000 } as State;
    expect(probeFails(open20s, 30_000, true)).toMatchObject({ openUntil: 31_000 });
    // Many waiting: the ceiling is PROBE_TURN_MS ÷ waiters (each carries a probe about once
    // in 24 s), at least the 50 ms floor: 48 waiters 500 ms, 600 waiters 50 ms.
    const crowd = (n: number) => {
      const admitted = breakerAdmit.apply(open20s, { cfg, leaseMs: 1_000 }, 30_000);
      const { probe } = admitted.result as { probe: number };
      const args = { cfg, gen: 0, probe, outcome: 'failure' as const, quick: true, waiters: n };
      return breakerRecord.apply(admitted.state, args, 30_000).state;
    };
    expect(PROBE_TURN_MS).toBe(24_000);
    expect(crowd(48)).toMatchObject({ openUntil: 30_500 });
    expect(crowd(600)).toMatchObject({ openUntil: 30_050 });
    expect(crowd(1)).toMatchObject({ openUntil: 31_000 });
    // Not quick: the waiters say nothing.
    const alone = breakerAdmit.apply(open20s, { cfg, leaseMs: 1_000 }, 30_000);
    const aloneProbe = (alone.result as { probe: number }).probe;
    const aloneArgs = { cfg, gen: 0, probe: aloneProbe, outcome: 'failure' as const, waiters: 600 };
    expect(breakerRecord.apply(alone.state, aloneArgs, 30_000).state).toMatchObject({
      openUntil: 31_000,
    });
  });

  it("while several wait, time the next probe from the failed one's departure", () => {
    type State = Parameters<typeof breakerRecord.apply>[0];
    let state: State;
    for (let i = 0; i < 2; i++) {
      state = breakerRecord.apply(state, { cfg, gen: 0, probe: null, outcome: 'failure' }, 0).state;
    }
    // 20 s into the outage, 600 waiting: a 50 ms cadence.
    const waiting = breakerAdmit.apply(
      state,
      { cfg, leaseMs: 1_000, waitMs: 60_000, peek: true, quick: true, waiters: 600 },
      20_000,
    ).state;
    const admitted = breakerAdmit.apply(waiting, { cfg, leaseMs: 1_000 }, 20_050);
    const { probe } = admitted.result as { probe: number };
    expect(probe).toBe(20_050);
    const fail = (at: number, quick: boolean) =>
      breakerRecord.apply(
        admitted.state,
        { cfg, gen: 0, probe, outcome: 'failure', ...(quick && { quick, waiters: 600 }) },
        at,
      ).state;
    // Its 503 back after 30 ms: the next may go 50 ms after it left, not 50 ms after the 503.
    expect(fail(20_080, true)).toMatchObject({ state: 'open', openUntil: 20_100 });
    // Back after 200 ms: the next may go at once.
    expect(fail(20_250, true)).toMatchObject({ state: 'open', openUntil: 20_250 });
    // Not quick: from the failure, at probeInterval.
    expect(fail(20_080, false)).toMatchObject({ openUntil: 21_080 });
  });

  it('treat an unrecognisable state as a fresh closed circuit', () => {
    const r = breakerAdmit.apply({ nonsense: true }, { cfg, leaseMs: 1_000 }, 0);
    expect(r.result).toEqual({ ok: true, gen: 0, probe: null, change: null });
  });
});

describe('CircuitBreaker properties', () => {
  type Action =
    | { t: 'admit'; lease: number }
    | { t: 'report'; pick: number; outcome: 'success' | 'failure' | 'neutral' | 'cancelled' }
    | { t: 'advance'; ms: number };
  const action: fc.Arbitrary<Action> = fc.oneof(
    {
      weight: 4,
      arbitrary: fc.record({
        t: fc.constant('admit' as const),
        lease: fc.integer({ min: 1, max: 4_000 }),
      }),
    },
    {
      weight: 4,
      arbitrary: fc.record({
        t: fc.constant('report' as const),
        pick: fc.nat(),
        outcome: fc.constantFrom('success', 'failure', 'failure', 'neutral', 'cancelled'),
      }),
    },
    {
      weight: 2,
      arbitrary: fc.record({
        t: fc.constant('advance' as const),
        ms: fc.integer({ min: 0, max: 7_000 }),
      }),
    },
  );
  const options = fc.record({
    halfOpenProbes: fc.integer({ min: 1, max: 3 }),
    minimumVolume: fc.integer({ min: 1, max: 12 }),
    failureRatio: fc.double({ min: 0.05, max: 1, noNaN: true }),
    window: fc.integer({ min: 100, max: 20_000 }),
    breakDuration: fc.integer({ min: 1, max: 6_000 }),
    consecutiveFailures: fc.option(fc.integer({ min: 1, max: 5 }), { nil: undefined }),
  });

  it('never has more live probes than halfOpenProbes, never trips below minimumVolume, fires each change once', async () => {
    await fc.assert(
      fc.asyncProperty(
        options,
        fc.array(action, { minLength: 20, maxLength: 150, size: 'max' }),
        async (opts, actions) => {
          const clock = fakeClock();
          const resolved = resolveBreakerOptions(opts);
          if (!resolved) throw new Error('unreachable');
          const events: BreakerStateChange[] = [];
          const store = memoryStore();
          const breaker = new CircuitBreaker(resolved, store, clock, (e) => events.push(e));
          type Held = { ticket: BreakerTicket; until: number; episode: number };
          let held: Held[] = [];
          let state: CircuitState = 'closed';
          let episode = 0; // half-open episodes
          let counted: Array<{ at: number; failed: boolean }> = [];
          const absorb = () => {
            for (const e of events.splice(0)) {
              expect(e.from).toBe(state); // transitions chain: each fired once, none skipped
              state = e.to;
              if (e.to === 'half-open') episode++;
              if (e.to === 'closed') counted = [];
              if (e.from === 'closed' && e.to === 'open') {
                const now = clock.now();
                const inWindow = counted.filter((c) => c.at > now - resolved.window);
                if (resolved.consecutiveFailures === undefined) {
                  expect(inWindow.length).toBeGreaterThanOrEqual(resolved.minimumVolume);
                } else {
                  const tail = counted.slice(-resolved.consecutiveFailures);
                  expect(tail).toHaveLength(resolved.consecutiveFailures);
                  expect(tail.every((c) => c.failed)).toBe(true);
                }
              }
            }
          };
          for (const a of actions) {
            if (a.t === 'advance') {
              await clock.advance(a.ms);
            } else if (a.t === 'admit') {
              const r = await breaker.admit(KEY, a.lease);
              absorb();
              if (r.ok) {
                held.push({
                  ticket: r.ticket,
                  until: clock.now() + a.lease + PROBE_LEASE_GRACE,
                  episode,
                });
                if (r.ticket.probe !== null) {
                  expect(state).toBe('half-open');
                  const now = clock.now();
                  const live = held.filter(
                    (h) => h.ticket.probe !== null && h.episode === episode && h.until > now,
                  );
                  expect(live.length).toBeLessThanOrEqual(resolved.halfOpenProbes);
                } else {
                  expect(state).toBe('closed');
                }
              } else {
                expect(state).not.toBe('closed');
                expect(r.retryAfter).toBeGreaterThan(0);
              }
            } else if (held.length > 0) {
              const i = a.pick % held.length;
              const h = held[i]!;
              held = held.filter((_, j) => j !== i);
              const countable = a.outcome === 'success' || a.outcome === 'failure';
              // The op counts a closed-state report only in the generation it was
              // admitted in. An idle key's state may have expired (all it held is then
              // out of the window, which the check above filters); successes are
              // reported in batches, so an absent state is not a forgotten window.
              const stored = store.peek(`breaker:${KEY}`, clock.now()) as
                | { gen: number }
                | undefined;
              if (
                h.ticket.probe === null &&
                state === 'closed' &&
                (stored?.gen ?? 0) === h.ticket.gen &&
                countable
              ) {
                counted.push({ at: clock.now(), failed: a.outcome === 'failure' });
              }
              await breaker.record(KEY, h.ticket, a.outcome);
              absorb();
            }
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe("the memory store's closed admission, without an operation", () => {
  const resolved = (options: BreakerOptions): ResolvedBreakerOptions => {
    const r = resolveBreakerOptions(options);
    if (r === false) throw new Error('unreachable');
    return r;
  };

  it('a circuit another breaker on the same store opened is seen at the next admission', async () => {
    const clock = fakeClock();
    const store = memoryStore();
    const options = resolved({ consecutiveFailures: 2 });
    const a = new CircuitBreaker(options, store, clock);
    const b = new CircuitBreaker(options, store, clock);
    // b admits twice: the second comes from what it remembers of the closed circuit.
    for (let i = 0; i < 2; i++) expect((await b.admit(KEY, 1_000)).ok).toBe(true);
    for (let i = 0; i < 2; i++) {
      const admission = await a.admit(KEY, 1_000);
      if (!admission.ok) throw new Error('a should be admitted');
      await a.record(KEY, admission.ticket, 'failure');
    }
    expect(await b.admit(KEY, 1_000)).toMatchObject({ ok: false });
  });

  it('a state written by hand into the store is seen at the next admission', async () => {
    const { breaker, store, clock } = setup();
    expect((await breaker.admit(KEY, 1_000)).ok).toBe(true);
    expect((await breaker.admit(KEY, 1_000)).ok).toBe(true);
    const now = clock.now();
    store.run(
      `breaker:${KEY}`,
      {
        name: 'test.open',
        apply: () => ({
          state: {
            state: 'open',
            gen: 0,
            buckets: [],
            streak: 0,
            breakMs: 5_000,
            openUntil: now + 5_000,
            probes: [],
            lastProbe: 0,
          },
          ttl: 60_000,
          result: null,
        }),
      },
      null,
      now,
    );
    expect(await breaker.admit(KEY, 1_000)).toEqual({ ok: false, retryAfter: 5_000 });
  });

  it('keeps the closed state alive as the admission did: a failure streak survives neutral calls', async () => {
    const { call, changes, clock } = setup({ consecutiveFailures: 2, window: 10_000 });
    await call('failure');
    // Every 5 s a neutral call (a 404): no record, but each admission extends the state's life.
    for (let i = 0; i < 4; i++) {
      await clock.advance(5_000);
      await call('neutral');
    }
    await call('failure');
    expect(changes).toEqual([['closed', 'open']]);
  });

  it('the same admissions, tickets and transitions as a store without the shortcut', async () => {
    const run = async (wrap?: (s: StateStore) => StateStore) => {
      const { call, changes, clock, store } = setup({ minimumVolume: 4, window: 1_000 }, wrap);
      const log: unknown[] = [];
      const outcomes = ['success', 'success', 'failure', 'neutral', 'failure', 'failure'] as const;
      for (let i = 0; i < 24; i++) {
        log.push(await call(outcomes[i % outcomes.length]!));
        await clock.advance(130);
      }
      return { log, changes, state: store.peek(`breaker:${KEY}`, clock.now()) };
    };
    const direct = await run();
    expect(direct.changes.length).toBeGreaterThan(0);
    expect(direct).toEqual(await run(asyncStore));
  });
});
