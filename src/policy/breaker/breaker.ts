/**
 * The circuit breaker: per origin key, closed → open after too many failures,
 * open fails fast, half-open lets a fixed number of probes through. Every
 * decision is one store operation, so a fleet sharing a store shares one
 * circuit per key.
 *
 * Where each decision lives:
 * - when does it open? `breakerRecord` (./ops.ts): the trip rule, consecutive
 *   failures or the failure ratio over the window, and a failed probe;
 * - may this attempt go, is it a probe? `breakerAdmit` (./ops.ts);
 * - how long does it stay open? `open` and `waitBreak` (./ops.ts);
 * - who waits on an open circuit, and when is the wait released?
 *   `BreakerWaitingRoom` (./wait.ts).
 * This file resolves the options, keeps the local view and calls those.
 */
import type { Clock } from '../../internal/clock.js';
import { LastMap } from '../../internal/last-map.js';
import { type MemoryStore, TOUCH, type Touchable } from '../../store/memory.js';
import type { Json, StateStore } from '../../store/store.js';
import { isPromiseLike, runOpMaybe } from '../store-call.js';
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
} from './ops.js';
import { type BreakerPeek, BreakerWaitingRoom } from './wait.js';

export type { BreakerOutcome, CircuitState } from './ops.js';
export {
  type BreakerOptions,
  breakerDefaults,
  type ResolvedBreakerOptions,
  resolveBreakerOptions,
} from './options.js';

import type { ResolvedBreakerOptions } from './options.js';

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
  /** The width of one of the window's buckets, ms: closed-state successes are batched by it. */
  readonly #bucket: number;
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
    this.#bucket = Math.max(1, Math.floor(this.#cfg.window / BREAKER_BUCKETS));
    this.failFast = options.failFast;
    this.#store = store;
    this.#touch = (store as Partial<Touchable>)[TOUCH];
    this.#clock = clock;
    this.#onStateChange = onStateChange;
    this.#rooms = new BreakerWaitingRoom(
      clock,
      options.probeInterval,
      (key, waitMs) => this.#peek(key, waitMs),
      options.maxWaiting,
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
   * is due), at most `maxWait` ms: `true` then, `false` on timeout or at
   * once when `maxWaiting` requests already wait for `key`. Rejects with
   * `signal.reason` on abort. Waiters of one process share one poll of the
   * store per key. `spare`: attempts the request has left after this one;
   * a probe goes to the waiter with the most.
   */
  wait(key: string, maxWait: number, signal?: AbortSignal, spare = 1): Promise<boolean> {
    return this.#rooms.wait(key, maxWait, signal, spare);
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
   * {@link PROBE_LEASE_GRACE}. `spare`: attempts the caller has left after
   * this one. A caller on its last attempt that will wait (`waitMs` > 0)
   * takes no probe while a waiter of this process can spare an attempt: it
   * is refused (`retryAfter: 0`) and waits, and the probe goes to that one.
   */
  admit(
    key: string,
    leaseMs: number,
    waitMs = 0,
    now: number = this.#clock.now(),
    spare = 1,
  ): BreakerAdmission | Promise<BreakerAdmission> {
    const touch = this.#touch;
    if (touch !== undefined) {
      // The memory store, a circuit closed when last looked at and untouched since: the
      // admission would read it and write it back as it is, so it only extends its life.
      const seen = this.#closed.get(key);
      if (seen !== undefined && touch(this.#storeKey(key), seen.state, now, this.#cfg.window)) {
        return this.#admitted(key, seen.result, now);
      }
    }
    return this.#ask(key, leaseMs, waitMs, now, spare);
  }

  /** {@link admit} as the store decides it (a small `admit` is inlined where it is called). */
  #ask(
    key: string,
    leaseMs: number,
    waitMs: number,
    now: number,
    spare: number,
  ): BreakerAdmission | Promise<BreakerAdmission> {
    const storeKey = this.#storeKey(key);
    const touch = this.#touch;
    const lease =
      (Number.isFinite(leaseMs) && leaseMs > 0 ? leaseMs : this.#cfg.maxBreakDuration) +
      PROBE_LEASE_GRACE;
    let args = this.#admitArgs(lease, waitMs);
    // A request that will wait beside others: the circuit may probe quickly (see waitBreak).
    if (waitMs > 0) {
      const waiters = this.#rooms.waiting(key);
      if (waiters >= 1) args = { ...args, quick: true, waiters: waiters + 1 };
      // A look that takes no probe: a failed one would lose this request, not a spare's.
      if (spare <= 0 && this.#rooms.spares(key)) args = { ...args, leaseMs: 0, peek: true };
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
    const start = now - (now % this.#bucket);
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
