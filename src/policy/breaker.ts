/**
 * The circuit breaker: per origin key, closed → open after too many failures,
 * open fails fast, half-open lets a fixed number of probes through. Every
 * decision is one store operation (see ./breaker-ops.ts), so a fleet sharing
 * a store shares one circuit per key.
 */
import type { Clock } from '../internal/clock.js';
import { LastMap } from '../internal/last-map.js';
import {
  checkObject,
  describe as describeValue,
  positiveFinite,
  positiveInteger,
  readNumber,
} from '../internal/validate.js';
import { type MemoryStore, TOUCH, type Touchable } from '../store/memory.js';
import type { Json, StateStore } from '../store/store.js';
import {
  BREAKER_BUCKETS,
  type BreakerAdmitArgs,
  type BreakerAdmitResult,
  type BreakerChange,
  type BreakerConfig,
  type BreakerOutcome,
  type BreakerRecordArgs,
  breakerAdmit,
  breakerRecord,
  type CircuitState,
} from './breaker-ops.js';
import { type BreakerPeek, BreakerWaitingRoom } from './breaker-wait.js';
import { isPromiseLike, runOpMaybe } from './store-call.js';

export type { BreakerOutcome, CircuitState } from './breaker-ops.js';

/** Options of the circuit breaker (`breaker` in `createFetch`). Durations in ms. */
export interface BreakerOptions {
  /**
   * Trip when failures / (failures + successes) over the window reaches this.
   * @default 0.5
   */
  failureRatio?: number | undefined;
  /**
   * Never trip on the ratio with fewer calls than this in the window.
   * @default 20
   */
  minimumVolume?: number | undefined;
  /**
   * Length of the sliding window, in ms, kept as 10 buckets of `window / 10`.
   * @default 10_000
   */
  window?: number | undefined;
  /**
   * How long the circuit stays open after it trips, in ms; doubled after
   * each failed probe, up to `maxBreakDuration`.
   * @default 5_000
   */
  breakDuration?: number | undefined;
  /**
   * Ceiling of the break duration, in ms.
   * @default 60_000 (or `breakDuration` if that is longer and this is not set)
   */
  maxBreakDuration?: number | undefined;
  /**
   * Probes let through at once while half-open; the rest fail fast.
   * @default 1
   */
  halfOpenProbes?: number | undefined;
  /**
   * Trip after this many failures in a row instead of on the ratio
   * (`failureRatio` and `minimumVolume` are then unused).
   * @default undefined (ratio mode)
   */
  consecutiveFailures?: number | undefined;
  /**
   * While requests wait on an open circuit, a probe goes this often (ms): the
   * break neither grows nor outlasts this then, so a waiting caller sees the
   * recovery within about this long.
   * @default 250
   */
  probeInterval?: number | undefined;
  /**
   * `true`: an open circuit always fails fast with `CircuitOpenError`. By
   * default a request that may still be retried, and whose deadline outlasts
   * the next probe, waits for the probe's verdict instead (no attempt counted,
   * no budget charged) and goes once the circuit closes. Fail fast suits an
   * interactive caller that has a fallback.
   * @default false
   */
  failFast?: boolean | undefined;
}

/** Validated, frozen breaker options. */
export interface ResolvedBreakerOptions {
  readonly failureRatio: number;
  readonly minimumVolume: number;
  readonly window: number;
  readonly breakDuration: number;
  readonly maxBreakDuration: number;
  readonly halfOpenProbes: number;
  readonly consecutiveFailures: number | undefined;
  readonly probeInterval: number;
  readonly failFast: boolean;
}

/** Defaults of {@link BreakerOptions}. */
export const breakerDefaults: ResolvedBreakerOptions = Object.freeze({
  failureRatio: 0.5,
  minimumVolume: 20,
  window: 10_000,
  breakDuration: 5_000,
  maxBreakDuration: 60_000,
  halfOpenProbes: 1,
  consecutiveFailures: undefined,
  probeInterval: 250,
  failFast: false,
});

const KNOWN = Object.keys(breakerDefaults);
const MS = 'a finite number of ms > 0';

/**
 * Validates `breaker` options once, when the client is built: `false` turns
 * the breaker off, `true` or `undefined` gives the defaults.
 * @throws TypeError for a wrong type or an unknown key; RangeError for a value out of range.
 */
export function resolveBreakerOptions(
  input: BreakerOptions | boolean | undefined,
): ResolvedBreakerOptions | false {
  if (input === false) return false;
  if (input === true || input === undefined) return breakerDefaults;
  const o = checkObject('breaker', input, KNOWN);
  const d = breakerDefaults;
  const p = 'breaker';
  const ratio = (n: number): boolean => n > 0 && n <= 1;
  const breakDuration = readNumber(o, 'breakDuration', p, d.breakDuration, positiveFinite, MS);
  const maxDefault = Math.max(d.maxBreakDuration, breakDuration);
  const maxBreakDuration = readNumber(o, 'maxBreakDuration', p, maxDefault, positiveFinite, MS);
  if (maxBreakDuration < breakDuration) {
    throw new RangeError(
      `breaker.maxBreakDuration must be >= breaker.breakDuration (${breakDuration}), got ${maxBreakDuration}`,
    );
  }
  const consecutive = o.consecutiveFailures;
  const failFast = o.failFast ?? d.failFast;
  if (typeof failFast !== 'boolean') {
    throw new TypeError(`breaker.failFast must be a boolean, got ${describeValue(failFast)}`);
  }
  return Object.freeze({
    failureRatio: readNumber(o, 'failureRatio', p, d.failureRatio, ratio, 'a number in (0, 1]'),
    minimumVolume: readNumber(
      o,
      'minimumVolume',
      p,
      d.minimumVolume,
      positiveInteger,
      'an integer >= 1',
    ),
    window: readNumber(o, 'window', p, d.window, positiveFinite, MS),
    breakDuration,
    maxBreakDuration,
    halfOpenProbes: readNumber(
      o,
      'halfOpenProbes',
      p,
      d.halfOpenProbes,
      positiveInteger,
      'an integer >= 1',
    ),
    consecutiveFailures:
      consecutive === undefined
        ? undefined
        : readNumber(o, 'consecutiveFailures', p, 1, positiveInteger, 'an integer >= 1'),
    probeInterval: readNumber(o, 'probeInterval', p, d.probeInterval, positiveFinite, MS),
    failFast,
  });
}

/**
 * Proof of admission, handed back to {@link CircuitBreaker.record}. Opaque:
 * `gen` ties a closed-state call to the closed period it started in, `probe`
 * names a half-open probe (`null` for an ordinary call).
 */
export interface BreakerTicket {
  readonly gen: number;
  readonly probe: number | null;
}

/** What {@link CircuitBreaker.admit} decides. `retryAfter` is ms until a call may be admitted again. */
export type BreakerAdmission =
  | { readonly ok: true; readonly ticket: BreakerTicket }
  | { readonly ok: false; readonly retryAfter: number };

/** A transition of one key's circuit. */
export interface BreakerStateChange {
  readonly key: string;
  readonly from: CircuitState;
  readonly to: CircuitState;
}

/** Store keys of the breaker are `breaker:` + the origin key. */
export const BREAKER_KEY_PREFIX = 'breaker:';

/**
 * Extra ms added to a probe's lease, so that a probe timing out at exactly
 * its attempt timeout still reports back before its slot is given away.
 */
export const PROBE_LEASE_GRACE = 1_000;

/**
 * The circuit breaker for every origin key of one client.
 * @example
 * const breaker = new CircuitBreaker(resolveBreakerOptions({}) as ResolvedBreakerOptions, memoryStore(), systemClock);
 * const admission = await breaker.admit('https://api.example.com', 30_000);
 * if (admission.ok) await breaker.record('https://api.example.com', admission.ticket, 'success');
 */
export class CircuitBreaker {
  /** Fail fast always, never wait for a probe's verdict. */
  readonly failFast: boolean;
  readonly #cfg: BreakerConfig;
  readonly #store: StateStore;
  readonly #clock: Clock;
  readonly #onStateChange: ((change: BreakerStateChange) => void) | undefined;
  /** Keys this process last saw open, or refusing an admission (half-open with its probes out). */
  readonly #refusing = new Set<string>();
  readonly #rooms: BreakerWaitingRoom;
  /** Closed-state successes counted here and not yet reported, per key: one bucket's worth. */
  readonly #successes = new LastMap<string, { gen: number; start: number; count: number }>();
  #closedAdmission: { readonly ok: true; readonly ticket: BreakerTicket } | undefined;
  /** The memory store's shortcut for a closed circuit's admission, when the store is one. */
  readonly #touch: Touchable[typeof TOUCH] | undefined;
  /** Per key, the closed state last admitted on and the admission's result (memory store only). */
  readonly #closed = new LastMap<string, { state: Json | undefined; result: BreakerAdmitResult }>();
  #lastArgs: BreakerAdmitArgs | undefined;
  #lastKey: string | undefined;
  #lastStoreKey = '';

  constructor(
    options: ResolvedBreakerOptions,
    store: StateStore,
    clock: Clock,
    onStateChange?: (change: BreakerStateChange) => void,
  ) {
    this.#cfg = Object.freeze({
      failureRatio: options.failureRatio,
      minimumVolume: options.minimumVolume,
      window: options.window,
      breakDuration: options.breakDuration,
      maxBreakDuration: options.maxBreakDuration,
      halfOpenProbes: options.halfOpenProbes,
      consecutiveFailures: options.consecutiveFailures ?? 0,
      probeInterval: options.probeInterval,
    });
    this.failFast = options.failFast;
    this.#store = store;
    this.#touch = (store as Partial<Touchable>)[TOUCH];
    this.#clock = clock;
    this.#onStateChange = onStateChange;
    this.#rooms = new BreakerWaitingRoom(clock, options.probeInterval, (key, waitMs) =>
      this.#peek(key, waitMs),
    );
  }

  /** ms between probes while requests wait. */
  get probeInterval(): number {
    return this.#cfg.probeInterval;
  }

  /** How long one admission counts its caller as waiting (the room renews it while it waits). */
  get waitLease(): number {
    return this.#rooms.lease;
  }

  /**
   * Whether `key`'s circuit was open (or refused an admission) when this
   * process last heard of it (local knowledge, no store call): a retry that
   * will meet an open circuit adds no load, so it is not charged to the
   * retry budget.
   */
  refusing(key: string): boolean {
    return this.#refusing.size > 0 && this.#refusing.has(key);
  }

  /**
   * Whether this process is releasing a backlog of `key` after an outage: the
   * rate limiter then knows its meters were silenced by the outage.
   */
  releasing(key: string): boolean {
    return this.#rooms.releasing(key);
  }

  /**
   * Waits until `key`'s circuit may admit a call again (closed, or a probe
   * is due), at most `maxWait` ms: `true` then, `false` on timeout. Rejects
   * with `signal.reason` on abort. Waiters of one process share one poll of
   * the store per key.
   */
  wait(key: string, maxWait: number, signal?: AbortSignal): Promise<boolean> {
    return this.#rooms.wait(key, maxWait, signal);
  }

  #peek(key: string, waitMs: number): BreakerPeek | Promise<BreakerPeek> {
    // The head may become the probe: quick probes only while others wait behind it.
    const waiters = this.#rooms.waiting(key);
    const args: BreakerAdmitArgs = { cfg: this.#cfg, leaseMs: 0, waitMs, peek: true };
    if (waiters >= 2) {
      args.quick = true;
      args.waiters = waiters;
    }
    return this.#run(key, args, (r) =>
      r.ok ? { ok: true, retryAfter: 0 } : { ok: false, retryAfter: r.retryAfter },
    );
  }

  /** One admission op; keeps this process's view of the key (refusing or not) current. */
  #run<T>(key: string, args: BreakerAdmitArgs, map: (r: BreakerAdmitResult) => T): T | Promise<T> {
    const now = this.#clock.now();
    return runOpMaybe(this.#store, this.#storeKey(key), breakerAdmit, args, now, (r) => {
      if (!r.ok) this.#refusing.add(key);
      else if (this.#refusing.size > 0) this.#refusing.delete(key);
      return map(r);
    });
  }

  /**
   * Asks whether a call to `key` may go. `leaseMs` is how long a half-open
   * probe may hold its slot without reporting (the executor passes the attempt
   * timeout; a non-finite value means `maxBreakDuration`), plus
   * {@link PROBE_LEASE_GRACE}.
   */
  admit(
    key: string,
    leaseMs: number,
    waitMs = 0,
    now: number = this.#clock.now(),
  ): BreakerAdmission | Promise<BreakerAdmission> {
    const storeKey = this.#storeKey(key);
    const touch = this.#touch;
    if (touch !== undefined) {
      // The memory store, a circuit closed when last looked at and untouched since: the
      // admission would read it and write it back as it is, so it only extends its life.
      const seen = this.#closed.get(key);
      if (seen !== undefined && touch(storeKey, seen.state, now, this.#cfg.window)) {
        return this.#admitted(key, seen.result, now);
      }
    }
    const lease =
      (Number.isFinite(leaseMs) && leaseMs > 0 ? leaseMs : this.#cfg.maxBreakDuration) +
      PROBE_LEASE_GRACE;
    let args = this.#admitArgs(lease, waitMs);
    // A request that will wait beside others: the circuit may probe quickly (see waitBreak).
    if (waitMs > 0) {
      const waiters = this.#rooms.waiting(key);
      if (waiters >= 1) args = { ...args, quick: true, waiters: waiters + 1 };
    }
    // runOpMaybe inlined: the closed circuit's admission is the hot path of every request.
    const result = this.#store.run(storeKey, breakerAdmit, args, now);
    if (isPromiseLike(result)) return Promise.resolve(result).then((r) => this.#admitted(key, r));
    if (touch !== undefined && result.ok && result.probe === null && result.change === null) {
      this.#remember(key, storeKey, result, now);
    }
    return this.#admitted(key, result, now);
  }

  /** Remembers the closed state `key` was admitted on (the memory store only, see {@link TOUCH}). */
  #remember(key: string, storeKey: string, result: BreakerAdmitResult, now: number): void {
    const closed = this.#closed;
    if (!closed.has(key) && closed.size >= 1024) closed.clear();
    closed.set(key, { state: (this.#store as MemoryStore).peek(storeKey, now), result });
  }

  /** Keeps this process's view of the key current, then says what the admission was. */
  #admitted(key: string, r: BreakerAdmitResult, now?: number): BreakerAdmission {
    if (!r.ok) {
      this.#refusing.add(key);
      return { ok: false, retryAfter: r.retryAfter };
    }
    if (this.#refusing.size > 0) this.#refusing.delete(key);
    if (r.probe !== null) {
      this.#emit(key, r.change);
      return { ok: true, ticket: Object.freeze({ gen: r.gen, probe: r.probe }) };
    }
    this.#rooms.admitted(key, now ?? this.#clock.now());
    this.#emit(key, r.change);
    // Every call of a closed period holds the same ticket: one frozen admission per generation.
    let closed = this.#closedAdmission;
    if (closed === undefined || closed.ticket.gen !== r.gen) {
      closed = Object.freeze({ ok: true, ticket: Object.freeze({ gen: r.gen, probe: null }) });
      this.#closedAdmission = closed;
    }
    return closed;
  }

  /** The admission's arguments: the same frozen object while the lease and the wait stay the same. */
  #admitArgs(leaseMs: number, waitMs: number): BreakerAdmitArgs {
    if (!(waitMs > 0)) waitMs = 0;
    let args = this.#lastArgs;
    if (args === undefined || args.leaseMs !== leaseMs || (args.waitMs ?? 0) !== waitMs) {
      args = Object.freeze(
        waitMs > 0 ? { cfg: this.#cfg, leaseMs, waitMs } : { cfg: this.#cfg, leaseMs },
      );
      this.#lastArgs = args;
    }
    return args;
  }

  /** `breaker:` + `key`, remembered for the last key (a client usually calls one origin). */
  #storeKey(key: string): string {
    if (key !== this.#lastKey) {
      this.#lastKey = key;
      this.#lastStoreKey = BREAKER_KEY_PREFIX + key;
    }
    return this.#lastStoreKey;
  }

  /**
   * Reports how an admitted call ended. A closed-state `'neutral'` or
   * `'cancelled'` costs nothing (no store call).
   */
  record(
    key: string,
    ticket: BreakerTicket,
    outcome: BreakerOutcome,
    now: number = this.#clock.now(),
  ): void | Promise<void> {
    let successes: [number, number] | undefined;
    if (ticket.probe === null) {
      if (outcome === 'neutral' || outcome === 'cancelled') return;
      // A closed-state success is counted here and reported with the next failure, or
      // once its bucket is over: one store call per bucket, not one per request.
      if (outcome === 'success') {
        this.#rooms.succeeded(key);
        return this.#succeeded(key, ticket.gen, 1, now);
      }
      const pending = this.#successes.get(key);
      // A failure of the batch's generation carries it; one of an older generation (admitted
      // before the circuit last closed) does not count, and leaves the batch for later.
      if (pending !== undefined && pending.gen === ticket.gen) {
        this.#successes.delete(key);
        successes = [pending.start, pending.count];
      }
    }
    const args: BreakerRecordArgs = {
      cfg: this.#cfg,
      gen: ticket.gen,
      probe: ticket.probe,
      outcome,
    };
    if (successes !== undefined) args.successes = successes;
    // A failed probe with others still waiting: the next probe may come quickly (waitBreak).
    if (ticket.probe !== null) {
      const waiters = this.#rooms.waiting(key);
      if (waiters >= 1) {
        args.quick = true;
        args.waiters = waiters;
      }
    }
    return this.#record(key, args, now);
  }

  /** Counts `count` closed-state successes of generation `gen` that ended within one bucket, `now`. */
  #succeeded(key: string, gen: number, count: number, now: number): void | Promise<void> {
    const pending = this.#successes.get(key);
    const start = now - (now % this.#bucketWidth());
    if (pending !== undefined && pending.gen === gen && pending.start === start) {
      pending.count += count;
      return;
    }
    this.#successes.set(key, { gen, start, count });
    if (pending === undefined) return;
    // The last bucket's batch is over: written as a neutral outcome that carries it.
    return this.#record(
      key,
      {
        cfg: this.#cfg,
        gen: pending.gen,
        probe: null,
        outcome: 'neutral',
        successes: [pending.start, pending.count],
      },
      now,
    );
  }

  #bucketWidth(): number {
    return Math.max(1, Math.floor(this.#cfg.window / BREAKER_BUCKETS));
  }

  /**
   * @internal Until when `key`'s circuit may admit on `ticket` with no call
   * here, its admissions and successes counted by the policies' quiet ledger
   * (ledger.ts) and handed over with {@link quietAdmitted} and
   * {@link quietSucceeded}: while it is closed on the memory store, as the
   * quick path of {@link admit} remembers it, with no one waiting on it, and
   * within the success bucket, the waiting room's second and the state's
   * life that `now` is in. `-Infinity`: not quiet.
   *
   * A batch of successes from an earlier bucket is not quiet: the next
   * success writes it, as it would have one by one.
   */
  quietUntil(key: string, ticket: BreakerTicket | undefined, now: number): number {
    if (this.#touch === undefined || ticket === undefined || ticket.probe !== null) {
      return Number.NEGATIVE_INFINITY;
    }
    const seen = this.#closed.get(key);
    if (
      seen === undefined ||
      !seen.result.ok ||
      seen.result.gen !== ticket.gen ||
      this.refusing(key) ||
      this.#rooms.holds(key)
    ) {
      return Number.NEGATIVE_INFINITY;
    }
    const width = this.#bucketWidth();
    const start = now - (now % width);
    const pending = this.#successes.get(key);
    if (pending !== undefined && (pending.start !== start || pending.gen !== ticket.gen)) {
      return Number.NEGATIVE_INFINITY;
    }
    return Math.min(start + width, (Math.floor(now / 1000) + 1) * 1000, now + this.#cfg.window);
  }

  /**
   * @internal `count` admissions of `key` that the quiet ledger let through
   * within one of its periods (see {@link quietUntil}), at `now`: what
   * {@link admit}'s quick path would have done for each.
   */
  quietAdmitted(key: string, count: number, now: number): void {
    this.#rooms.admitted(key, now, count);
    const seen = this.#closed.get(key);
    if (seen !== undefined) this.#touch?.(this.#storeKey(key), seen.state, now, this.#cfg.window);
  }

  /** @internal `count` closed-state successes on `ticket`, counted by the quiet ledger, at `now`. */
  quietSucceeded(
    key: string,
    ticket: BreakerTicket,
    count: number,
    now: number,
  ): void | Promise<void> {
    return this.#succeeded(key, ticket.gen, count, now);
  }

  #record(key: string, args: BreakerRecordArgs, now: number): void | Promise<void> {
    return runOpMaybe(this.#store, this.#storeKey(key), breakerRecord, args, now, (r) => {
      this.#emit(key, r.change);
    });
  }

  #emit(key: string, change: BreakerChange): void {
    if (change === null) return;
    if (change[1] === 'closed') this.#refusing.delete(key);
    else if (change[1] === 'open') this.#refusing.add(key);
    // This process saw a verdict: its waiters need not wait for the next poll.
    if (change[0] === 'half-open') this.#rooms.wake(key);
    if (this.#onStateChange === undefined) return;
    try {
      this.#onStateChange({ key, from: change[0], to: change[1] });
    } catch {
      // A listener's bug must not break the request that happened to cause the transition.
    }
  }
}
