/**
 * The retry budget: per origin key, retries of failures may add at most
 * `ratio` of the recent first attempts, plus a floor of `minPerSecond`, so
 * one logical request never turns into a storm however many layers retry.
 *
 * Where each decision lives, all in this file:
 * - does this retry cost a token? `chargesBudget` (paid by `payRetry`, policy/gate.ts);
 * - is there a token? `budgetWithdraw` (the store operation), which
 *   `RetryBudget.take` calls and, when there is none, waits for the floor;
 * - what a first attempt earns: `budgetDeposit`.
 * @see https://finagle.github.io/blog/2016/02/08/retry-budgets/ (the same idea)
 */
import { type Clock, noop } from '../../internal/clock.js';
import { LastMap } from '../../internal/last-map.js';
import { sleepUnder } from '../../internal/signals.js';
import { checkObject, nonNegativeFinite, readNumber } from '../../internal/validate.js';
import type { Json, StateStore, StoreOperation, StoreUpdate } from '../../store/store.js';
import { ignoreRejection, runOp, runOpMaybe } from '../store-call.js';

/** Options of the retry budget (`budget` in `createFetch`). */
export interface BudgetOptions {
  /**
   * Retries earned by each first attempt: 0.1 lets retries add 10% load.
   * @default 0.1
   */
  ratio?: number | undefined;
  /**
   * Retries per second allowed whatever the traffic, so that a quiet key can
   * still retry. At most one second's worth (at least one retry) is banked.
   * @default 10
   */
  minPerSecond?: number | undefined;
}

/** Validated, frozen budget options. */
export interface ResolvedBudgetOptions {
  readonly ratio: number;
  readonly minPerSecond: number;
}

/** Defaults of {@link BudgetOptions}. */
export const budgetDefaults: ResolvedBudgetOptions = Object.freeze({
  ratio: 0.1,
  minPerSecond: 10,
});

/**
 * Time constant, in ms, of the decay of earned retries: what was earned
 * `BUDGET_MEMORY_MS` ago is worth 1/e. The bank therefore holds about
 * `ratio` × the first attempts of the last ten seconds, never an hour's.
 */
export const BUDGET_MEMORY_MS = 10_000;

/** Validates `budget` options: `false` is off, `true`/`undefined` the defaults. */
export function resolveBudgetOptions(
  input: BudgetOptions | boolean | undefined,
): ResolvedBudgetOptions | false {
  if (input === false) return false;
  if (input === true || input === undefined) return budgetDefaults;
  const o = checkObject('budget', input, Object.keys(budgetDefaults));
  const d = budgetDefaults;
  return Object.freeze({
    ratio: readNumber(o, 'ratio', 'budget', d.ratio, nonNegativeFinite, 'a finite number >= 0'),
    minPerSecond: readNumber(
      o,
      'minPerSecond',
      'budget',
      d.minPerSecond,
      nonNegativeFinite,
      'a finite number >= 0',
    ),
  });
}

/**
 * Arguments of the budget operations. `count` (deposit): first attempts
 * credited at once (absent = 1). `deposits` (withdraw): first attempts not
 * yet credited, credited before the withdrawal (absent = 0). `age`: ms since
 * the oldest of those (absent = 0); the credit decays as if made then.
 */
export type BudgetArgs = {
  ratio: number;
  minPerSecond: number;
  memoryMs: number;
  count?: number;
  deposits?: number;
  age?: number;
};

/** The credit of `n` first attempts made `age` ms ago. */
function credit(args: BudgetArgs, n: number): number {
  const age = args.age ?? 0;
  return age > 0 ? args.ratio * n * Math.exp(-age / args.memoryMs) : args.ratio * n;
}
/** State JSON of one budget key. */
export type BudgetState = { floor: number; earned: number; at: number };

/** The most floor tokens a key can bank: one second's worth, and at least one retry. */
export function floorCap(minPerSecond: number): number {
  return minPerSecond > 0 ? Math.max(1, minPerSecond) : 0;
}

function refill(json: Json | undefined, args: BudgetArgs, now: number): BudgetState {
  const cap = floorCap(args.minPerSecond);
  const s = json as BudgetState | undefined;
  if (s === undefined || typeof s !== 'object' || typeof s.floor !== 'number') {
    return { floor: cap, earned: 0, at: now };
  }
  const dt = Math.max(0, now - s.at);
  return {
    floor: Math.min(cap, s.floor + (dt * args.minPerSecond) / 1000),
    earned: s.earned * Math.exp(-dt / args.memoryMs),
    at: Math.max(now, s.at),
  };
}

function store<R extends Json>(s: BudgetState, args: BudgetArgs, result: R): StoreUpdate<R> {
  const cap = floorCap(args.minPerSecond);
  const refillMs = args.minPerSecond > 0 ? ((cap - s.floor) * 1000) / args.minPerSecond : 0;
  return { state: s, ttl: Math.max(Math.ceil(refillMs), 3 * args.memoryMs), result };
}

/** `staunch.budget.deposit`: a first attempt earns `ratio` of a retry. Result: the balance after. */
export const budgetDeposit: StoreOperation<BudgetArgs, number> = Object.freeze({
  name: 'staunch.budget.deposit',
  apply(json: Json | undefined, args: BudgetArgs, now: number): StoreUpdate<number> {
    const s = refill(json, args, now);
    s.earned += args.count === undefined ? args.ratio : credit(args, args.count);
    return store(s, args, s.floor + s.earned);
  },
});

/**
 * `staunch.budget.withdraw`: takes one retry if the balance (floor + earned)
 * holds one, earned tokens first. Result: whether it did.
 */
export const budgetWithdraw: StoreOperation<BudgetArgs, boolean> = Object.freeze({
  name: 'staunch.budget.withdraw',
  apply(json: Json | undefined, args: BudgetArgs, now: number): StoreUpdate<boolean> {
    const s = refill(json, args, now);
    if (args.deposits !== undefined) s.earned += credit(args, args.deposits);
    if (s.floor + s.earned < 1) return store(s, args, false);
    if (s.earned >= 1) s.earned -= 1;
    else {
      s.floor = Math.max(0, s.floor - (1 - s.earned));
      s.earned = 0;
    }
    return store(s, args, true);
  },
});

/**
 * Whether a retry takes one from the budget. The decision marks what is a
 * retry of a failure (`charged`; the stale keep-alive race is not). Of
 * those, not charged: a retry after a 429 while a rate limiter bounds the
 * key (pacing, not failure), and one that will meet an open circuit
 * (`circuitOpen`, asked last): it waits for the probe's verdict and adds no
 * load until then.
 */
export function chargesBudget(
  charged: boolean,
  status: number | undefined,
  rateLimited: boolean,
  circuitOpen: () => boolean,
): boolean {
  return charged && !(status === 429 && rateLimited) && !circuitOpen();
}

/** How long first attempts are counted locally before their credit is written. */
const DEPOSIT_BATCH_MS = 1_000;

/** Store keys of the budget are `budget:` + the origin key. */
export const BUDGET_KEY_PREFIX = 'budget:';

/**
 * The retry budget for every origin key of one client.
 * @example
 * budget.deposit(key);                          // on every first attempt
 * if (!(await budget.tryWithdraw(key))) giveUp(); // before retrying a failure
 */
export class RetryBudget {
  readonly #args: BudgetArgs;
  readonly #store: StateStore;
  readonly #clock: Clock;
  /** First attempts counted here and not yet credited in the store, per key. */
  readonly #pending = new LastMap<string, { count: number; since: number }>();

  constructor(options: ResolvedBudgetOptions, store: StateStore, clock: Clock) {
    this.#args = Object.freeze({
      ratio: options.ratio,
      minPerSecond: options.minPerSecond,
      memoryMs: BUDGET_MEMORY_MS,
    });
    this.#store = store;
    this.#clock = clock;
  }

  /**
   * Credits `key` with a first attempt. Call it once per logical request,
   * before the first attempt. Credits are counted here and written in one
   * store operation a second (or with the next withdrawal), not one per
   * request.
   */
  deposit(key: string, now: number = this.#clock.now()): void | Promise<void> {
    const pending = this.#pending.get(key);
    if (pending === undefined) {
      if (this.#pending.size >= 1024) this.#flushAll(now);
      this.#pending.set(key, { count: 1, since: now });
      return;
    }
    if (now - pending.since < DEPOSIT_BATCH_MS) {
      pending.count++;
      return;
    }
    // The batch is a second old: credit it (as of its first deposit), start the next.
    this.#pending.set(key, { count: 1, since: now });
    const args = { ...this.#args, count: pending.count, age: now - pending.since };
    return runOpMaybe(this.#store, BUDGET_KEY_PREFIX + key, budgetDeposit, args, now, noop);
  }

  /** {@link deposit}, best effort: a store that fails is ignored, and the request goes on. */
  credit(key: string, now: number): void {
    try {
      ignoreRejection(this.deposit(key, now));
    } catch {
      // Policies learn on a best-effort basis.
    }
  }

  /**
   * How long until the budget may hold another retry when it holds none: the
   * floor's refill time for one retry (ms). `Infinity` with no floor.
   */
  get refillMs(): number {
    return this.#args.minPerSecond > 0 ? 1000 / this.#args.minPerSecond : Number.POSITIVE_INFINITY;
  }

  /**
   * Takes one retry from `key`'s budget; `false` means the retry must not be
   * made. Call it before retrying a failure (5xx, network error, timeout),
   * not before a retry paced by a 429: the rate limiter bounds those.
   */
  tryWithdraw(key: string): Promise<boolean> {
    const pending = this.#pending.get(key);
    if (pending !== undefined) this.#pending.delete(key);
    const now = this.#clock.now();
    const args =
      pending === undefined
        ? this.#args
        : { ...this.#args, deposits: pending.count, age: now - pending.since };
    return runOp(this.#store, BUDGET_KEY_PREFIX + key, budgetWithdraw, args, now, identity);
  }

  /**
   * Takes a retry of `key`; when the budget holds none, waits for its floor
   * to refill one (under `signal`), as long as the retry still fits before
   * `latest`: the budget bounds the rate of retries, it does not drop them.
   * A circuit that opens meanwhile (`refusing`) ends the wait uncharged: the
   * retry then waits for the probe's verdict and adds no load. The ms it
   * waited, or `false`: no retry in time. A store that fails grants it.
   */
  async take(
    key: string,
    latest: number,
    signal: AbortSignal | undefined,
    refusing: () => boolean,
  ): Promise<number | false> {
    if (await this.tryWithdraw(key).catch(() => true)) return 0;
    const clock = this.#clock;
    const step = Math.max(50, this.refillMs);
    const since = clock.now();
    while (clock.now() + step < latest) {
      await sleepUnder(clock, step, signal);
      if (refusing() || (await this.tryWithdraw(key).catch(() => true))) return clock.now() - since;
    }
    return false;
  }

  /** Writes every key's pending credits (many keys: bounded memory). */
  #flushAll(now: number): void {
    for (const [key, pending] of this.#pending) {
      const args = { ...this.#args, count: pending.count, age: now - pending.since };
      // Best effort, as every policy write.
      runOp(this.#store, BUDGET_KEY_PREFIX + key, budgetDeposit, args, now, noop).catch(noop);
    }
    this.#pending.clear();
  }
}

function identity<T>(value: T): T {
  return value;
}
