/**
 * The circuit breaker's store operations: pure functions of (state, args,
 * now). The memory store runs them in-process; a remote store re-implements
 * each one under its `name` (see docs/policies.md for the exact contract).
 */
import type { Json, StoreOperation, StoreUpdate } from '../../store/store.js';

/** Where a circuit is: passing calls, failing fast, or letting probes through. */
export type CircuitState = 'closed' | 'open' | 'half-open';

/**
 * How a call ended, as the breaker sees it: `'failure'` is a network error,
 * an attempt timeout or a 5xx; `'neutral'` is any other response (2xx-4xx,
 * 429 included: they say nothing bad about the upstream's health);
 * `'cancelled'` is a call the caller aborted.
 */
export type BreakerOutcome = 'success' | 'failure' | 'neutral' | 'cancelled';

/** Breaker settings as the operations receive them (all ms, all finite). */
export type BreakerConfig = {
  failureRatio: number;
  minimumVolume: number;
  window: number;
  breakDuration: number;
  maxBreakDuration: number;
  halfOpenProbes: number;
  /** 0 = ratio mode. */
  consecutiveFailures: number;
  /**
   * While requests wait on the circuit: the longest break, in ms, before the
   * next probe (the break does not grow then, and a longer one is cut to
   * this); early in an outage the break is shorter (see {@link waitBreak}).
   */
  probeInterval: number;
};

/** The state JSON of one breaker key. */
export type BreakerState = {
  state: CircuitState;
  /** Generation of the closed state: the time it last closed (0 = never opened). */
  gen: number;
  /** Closed only: `[bucketStart, failures, successes]`, oldest first. */
  buckets: [number, number, number][];
  /** Closed only: failures in a row. */
  streak: number;
  /** Open and half-open: the current break duration; 0 while closed. */
  breakMs: number;
  /** Open only: when the next probe may go (epoch ms); 0 otherwise. */
  openUntil: number;
  /** Half-open only: `[probeId, leaseUntil]` of the probes in flight. */
  probes: [number, number][];
  /** The last probe id handed out (ids are increasing, at least `now`). */
  lastProbe: number;
  /**
   * Open and half-open: epoch ms until which some request waits for the
   * circuit's verdict (renewed by each waiter's admission); 0 or absent when
   * nobody waits. Absent in states written before it existed.
   */
  waitUntil?: number;
  /**
   * Open and half-open: epoch ms the circuit tripped (this outage's start, as
   * the breaker saw it); 0 while closed, and in states written before it
   * existed (their waiters are probed every `probeInterval`).
   */
  openedAt?: number;
};

/**
 * Arguments of {@link breakerAdmit}. `waitMs` > 0: the caller will wait that
 * long for the verdict if refused (it is counted as waiting). `peek`: only
 * look, never take a probe (a refusal with `retryAfter: 0` then means that a
 * probe may go now).
 */
export type BreakerAdmitArgs = {
  cfg: BreakerConfig;
  leaseMs: number;
  waitMs?: number;
  peek?: boolean;
  /** With `waitMs`: others wait too, so the break may be the quick one ({@link waitBreak}). */
  quick?: boolean;
  /** With `quick`: how many wait in the caller's process (shortens the quick break's ceiling). */
  waiters?: number;
};
/** A state transition, `[from, to]`, or `null`. */
export type BreakerChange = [CircuitState, CircuitState] | null;
/** Result of {@link breakerAdmit}. */
export type BreakerAdmitResult =
  | { ok: true; gen: number; probe: number | null; change: BreakerChange }
  | { ok: false; retryAfter: number };
/**
 * Arguments of {@link breakerRecord}. `successes`: closed-state successes a
 * process counted locally and reports in one go, `[bucketStart, count]`
 * (absent = none); they count before `outcome`.
 */
export type BreakerRecordArgs = {
  cfg: BreakerConfig;
  gen: number;
  probe: number | null;
  outcome: BreakerOutcome;
  successes?: [number, number];
  /** A failed probe with others still waiting: the next break may be the quick one ({@link waitBreak}). */
  quick?: boolean;
  /** With `quick`: how many wait in the caller's process (see {@link waitBreak}). */
  waiters?: number;
};
/** Result of {@link breakerRecord}. */
export type BreakerRecordResult = { change: BreakerChange };

/** Buckets per sliding window. */
export const BREAKER_BUCKETS = 10;

function closedState(gen: number, lastProbe: number): BreakerState {
  return {
    state: 'closed',
    gen,
    buckets: [],
    streak: 0,
    breakMs: 0,
    openUntil: 0,
    probes: [],
    lastProbe,
    waitUntil: 0,
    openedAt: 0,
  };
}

/** Whether some request waits for this circuit's verdict at `now`. */
function waited(s: BreakerState, now: number): boolean {
  return (s.waitUntil ?? 0) > now;
}

/** The shortest break while requests wait: the first probes of an outage, ms (or `probeInterval`, if less). */
export const PROBE_FLOOR_MS = 50;
/** While requests wait, the break is at most this share of the outage so far. */
export const PROBE_SHARE = 0.1;
/**
 * With many waiting, the quick break's ceiling is this divided by the waiters
 * (at least the floor, at most `probeInterval`): a probe spends one attempt of
 * the waiter that carries it, so the waiters, taking turns, each carry one at
 * most about once in this many ms.
 */
export const PROBE_TURN_MS = 24_000;

/**
 * The break before the next probe while requests wait: `probeInterval`; or,
 * when several wait (`quick`), a tenth of the outage so far, at least 50 ms,
 * at most `probeInterval`. A blip of a second is then seen within 100 ms of
 * its end, and a long outage is probed every `probeInterval` (issue 9: with
 * a steady 250 ms, each of three 1 s outages cost a mean 125 ms of a 1 s
 * drain window). A lone waiter is the probe every time, and each probe is
 * one of its attempts: quick probes would spend them in the outage's first
 * few hundred ms, so it is probed at the steady pace. With `waiters` (the
 * count in the caller's process) the ceiling is {@link PROBE_TURN_MS} ÷
 * waiters instead, between the floor and `probeInterval`.
 */
export function waitBreak(
  s: BreakerState,
  cfg: BreakerConfig,
  now: number,
  quick: boolean,
  waiters = 0,
): number {
  const longest = Math.min(cfg.probeInterval, cfg.maxBreakDuration);
  if (!quick) return longest;
  const floor = Math.min(PROBE_FLOOR_MS, longest);
  const ceiling =
    waiters > 0 ? Math.min(longest, Math.max(floor, PROBE_TURN_MS / waiters)) : longest;
  const share = (now - (s.openedAt ?? 0)) * PROBE_SHARE;
  return Math.min(ceiling, Math.max(floor, share));
}

/** The waiters an op's args report (0 = not said, or not quick). */
function waitersOf(args: { quick?: boolean; waiters?: number }): number {
  const n = args.waiters;
  return args.quick === true && typeof n === 'number' && n > 0 ? n : 0;
}

/**
 * A refused caller that will wait: counted as waiting until its wait ends,
 * and an open circuit's break cut to {@link waitBreak} from now (a break
 * that grew while nobody waited must not outlast a waiting caller's deadline).
 */
function registerWaiter(
  s: BreakerState,
  cfg: BreakerConfig,
  waitMs: number,
  quick: boolean,
  waiters: number,
  now: number,
) {
  const waitUntil = Math.max(s.waitUntil ?? 0, now + waitMs);
  const openUntil =
    s.state === 'open'
      ? Math.min(s.openUntil, now + waitBreak(s, cfg, now, quick, waiters))
      : s.openUntil;
  return { ...s, waitUntil, openUntil };
}

/** Reads a stored state; anything unrecognisable counts as a fresh closed circuit. */
function readState(json: Json | undefined): BreakerState {
  if (typeof json === 'object' && json !== null && !Array.isArray(json)) {
    const s = json as Partial<BreakerState>;
    if (
      (s.state === 'closed' || s.state === 'open' || s.state === 'half-open') &&
      Array.isArray(s.buckets) &&
      Array.isArray(s.probes)
    ) {
      return s as BreakerState;
    }
  }
  return closedState(0, 0);
}

function keepMs(cfg: BreakerConfig): number {
  return Math.max(cfg.window, cfg.maxBreakDuration);
}

function update<R extends Json>(
  s: BreakerState,
  cfg: BreakerConfig,
  now: number,
  result: R,
): StoreUpdate<R> {
  let ttl = cfg.window;
  if (s.state === 'open') ttl = s.openUntil - now + keepMs(cfg);
  else if (s.state === 'half-open') {
    const lastLease = s.probes.reduce((max, [, until]) => Math.max(max, until), now);
    ttl = lastLease - now + keepMs(cfg);
  }
  return { state: s, ttl, result };
}

function admitProbe(
  s: BreakerState,
  cfg: BreakerConfig,
  leaseMs: number,
  now: number,
  change: BreakerChange,
): StoreUpdate<BreakerAdmitResult> {
  const id = Math.max(now, s.lastProbe + 1);
  const next: BreakerState = { ...s, probes: [...s.probes, [id, now + leaseMs]], lastProbe: id };
  return update(next, cfg, now, { ok: true, gen: s.gen, probe: id, change });
}

/**
 * `staunch.breaker.admit`: may a call go? Closed: yes (read only). Open:
 * no, until `openUntil`; the first admit after it moves to half-open and is a
 * probe. Half-open: expired leases are dropped, then yes as a probe while
 * fewer than `halfOpenProbes` are in flight, else no. A caller that will wait
 * (`waitMs`) is counted as waiting and cuts the break to `probeInterval`;
 * `peek` never takes a probe.
 */
export const breakerAdmit: StoreOperation<BreakerAdmitArgs, BreakerAdmitResult> = Object.freeze({
  name: 'staunch.breaker.admit',
  apply(
    json: Json | undefined,
    args: BreakerAdmitArgs,
    now: number,
  ): StoreUpdate<BreakerAdmitResult> {
    const { cfg, leaseMs, waitMs = 0, peek = false, quick } = args;
    const read = readState(json);
    if (read.state === 'closed') {
      return {
        state: json,
        ttl: cfg.window,
        result: { ok: true, gen: read.gen, probe: null, change: null },
      };
    }
    const s =
      waitMs > 0 ? registerWaiter(read, cfg, waitMs, quick === true, waitersOf(args), now) : read;
    if (s.state === 'open') {
      if (now < s.openUntil)
        return update(s, cfg, now, { ok: false, retryAfter: s.openUntil - now });
      if (peek) return update(s, cfg, now, { ok: false, retryAfter: 0 });
      const halfOpen: BreakerState = { ...s, state: 'half-open', openUntil: 0, probes: [] };
      return admitProbe(halfOpen, cfg, leaseMs, now, ['open', 'half-open']);
    }
    const live = s.probes.filter(([, until]) => until > now);
    const pruned: BreakerState = { ...s, probes: live };
    if (live.length < cfg.halfOpenProbes) {
      if (peek) return update(pruned, cfg, now, { ok: false, retryAfter: 0 });
      return admitProbe(pruned, cfg, leaseMs, now, null);
    }
    const freeAt = live.reduce((min, [, until]) => Math.min(min, until), Number.POSITIVE_INFINITY);
    return update(pruned, cfg, now, { ok: false, retryAfter: Math.max(1, freeAt - now) });
  },
});

function open(s: BreakerState, breakMs: number, now: number): BreakerState {
  return {
    ...s,
    state: 'open',
    buckets: [],
    streak: 0,
    breakMs,
    openUntil: now + breakMs,
    probes: [],
    // A trip starts the outage; a failed probe continues it.
    openedAt: s.state === 'closed' ? now : (s.openedAt ?? 0),
  };
}

function recordProbe(
  s: BreakerState,
  args: BreakerRecordArgs,
  now: number,
): StoreUpdate<BreakerRecordResult> | undefined {
  const { cfg, probe, outcome, quick } = args;
  if (s.state !== 'half-open' || !s.probes.some(([id]) => id === probe)) return undefined;
  if (outcome === 'cancelled') {
    const probes = s.probes.filter(([id]) => id !== probe);
    return update({ ...s, probes }, cfg, now, { change: null });
  }
  if (outcome === 'failure') {
    // Requests waiting for the verdict: probe again soon, at a steady pace.
    // Nobody waiting: back off, the break doubling up to its ceiling.
    const waiting = waited(s, now);
    const breakMs = waiting
      ? waitBreak(s, cfg, now, quick === true, waitersOf(args))
      : Math.min(cfg.maxBreakDuration, Math.max(cfg.breakDuration, s.breakMs * 2));
    const next = open(s, breakMs, now);
    // Several waiting: the break runs from the probe's departure (its id), so probes leave
    // at that cadence, not at the cadence plus the failed probe's round trip.
    if (waiting && quick === true && probe !== null) {
      next.openUntil = Math.max(now, Math.min(next.openUntil, probe + breakMs));
    }
    return update(next, cfg, now, { change: ['half-open', 'open'] });
  }
  const closed = closedState(Math.max(now, s.gen + 1), s.lastProbe);
  return update(closed, cfg, now, { change: ['half-open', 'closed'] });
}

/**
 * `staunch.breaker.record`: learns from a call's outcome. A probe (`probe`
 * set) counts only while its lease is still held in half-open: success or
 * neutral closes, failure reopens with the break doubled (capped),
 * cancelled frees the slot. A closed-state call counts only if the circuit is
 * still closed in the same generation, and only success or failure (plus any
 * batch of `successes` counted locally before it): it goes into the window,
 * then the circuit trips if the rule says so (ratio mode:
 * the ratio over the window, or over its newest bucket alone, each with at
 * least `minimumVolume` calls).
 */
export const breakerRecord: StoreOperation<BreakerRecordArgs, BreakerRecordResult> = Object.freeze({
  name: 'staunch.breaker.record',
  apply(
    json: Json | undefined,
    args: BreakerRecordArgs,
    now: number,
  ): StoreUpdate<BreakerRecordResult> {
    const { cfg, gen, probe, outcome } = args;
    const s = readState(json);
    const unchanged = (): StoreUpdate<BreakerRecordResult> =>
      json === undefined
        ? { state: undefined, ttl: 0, result: { change: null } }
        : update(s, cfg, now, { change: null });
    if (probe !== null) return recordProbe(s, args, now) ?? unchanged();
    if (s.state !== 'closed' || s.gen !== gen) return unchanged();
    const counted = outcome === 'success' || outcome === 'failure';
    const batch = args.successes;
    if (!counted && batch === undefined) return unchanged();

    const failed = outcome === 'failure';
    const width = Math.max(1, Math.floor(cfg.window / BREAKER_BUCKETS));
    const start = now - (now % width);
    // The buckets still in the window; only those changed are copied (the others are
    // shared with the input, which is never mutated). A missing bucket is appended.
    const cutoff = now - cfg.window;
    const buckets: [number, number, number][] = [];
    for (const b of s.buckets) if (b[0] > cutoff) buckets.push(b);
    const bucketAt = (at: number): [number, number, number] => {
      const i = buckets.findIndex((b) => b[0] === at);
      if (i < 0) {
        const fresh: [number, number, number] = [at, 0, 0];
        buckets.push(fresh);
        return fresh;
      }
      const copy: [number, number, number] = [buckets[i]![0], buckets[i]![1], buckets[i]![2]];
      buckets[i] = copy;
      return copy;
    };
    let streak = s.streak;
    if (batch !== undefined && batch[1] > 0) {
      // Successes end a run of failures, whether or not their bucket is still in the window.
      streak = 0;
      if (batch[0] > cutoff) bucketAt(batch[0])[2] += batch[1];
    }
    let bucket: [number, number, number] | undefined;
    if (counted) {
      bucket = bucketAt(start);
      bucket[failed ? 1 : 2] += 1;
      streak = failed ? streak + 1 : 0;
    }

    let trip = false;
    if (cfg.consecutiveFailures > 0) trip = streak >= cfg.consecutiveFailures;
    else if (failed && bucket !== undefined) {
      let failures = 0;
      let total = 0;
      for (const [, f, ok] of buckets) {
        failures += f;
        total += f + ok;
      }
      // The whole window, or its newest bucket alone: a hard outage after a healthy spell
      // trips within a bucket instead of waiting for its failures to outweigh the window's
      // successes (seconds of requests spent on a dead upstream).
      const newest = bucket[1] + bucket[2];
      trip =
        (total >= cfg.minimumVolume && failures >= cfg.failureRatio * total) ||
        (newest >= cfg.minimumVolume && bucket[1] >= cfg.failureRatio * newest);
    }
    if (trip)
      return update(open(s, cfg.breakDuration, now), cfg, now, { change: ['closed', 'open'] });
    return update({ ...s, buckets, streak }, cfg, now, { change: null });
  },
});
