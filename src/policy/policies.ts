/**
 * The per-origin policies of one client, built once from its options. The
 * executor consults them in this order for every attempt: concurrency slot →
 * rate-limit token → breaker admission → transport; and the budget before
 * every retry of a failure.
 */
import type { Clock } from '../internal/clock.js';
import { describe } from '../internal/validate.js';
import type { StateStore } from '../store/store.js';
import {
  type BreakerOptions,
  type BreakerStateChange,
  CircuitBreaker,
  resolveBreakerOptions,
} from './breaker.js';
import { type BudgetOptions, RetryBudget, resolveBudgetOptions } from './budget.js';
import {
  ConcurrencyLimiter,
  type ConcurrencyOptions,
  resolveConcurrencyOptions,
} from './concurrency.js';
import { RateLimiter, type RateLimitOptions, resolveRateLimitOptions } from './rate-limiter.js';

/** What a policy key function sees of a request. */
export interface PolicyRequest {
  /** Upper-case method. */
  readonly method: string;
  /** The full URL, as given (not redacted). */
  readonly url: string;
  /**
   * The request body when it is a string (a JSON API's body), for keys that
   * depend on it (`staunch/llm` keys on the body's `model`); absent for any
   * other body, and from `staunch/undici`.
   */
  readonly body?: string | undefined;
}

/** Maps a request to the key its policy state is kept under. @default its origin */
export type PolicyKey = (request: PolicyRequest) => string;

export interface PolicyOptions {
  /** Circuit breaker per key; `false` turns it off. @default on */
  breaker?: BreakerOptions | boolean;
  /** Retry budget per key; `false` turns it off. @default { ratio: 0.1, minPerSecond: 10 } */
  budget?: BudgetOptions | boolean;
  /** Client-side rate limit per key. @default 'adaptive' */
  rateLimit?: 'adaptive' | RateLimitOptions | boolean;
  /** In-flight limit per key, with a bounded queue. @default false */
  concurrency?: ConcurrencyOptions | number | false;
  /** Where breaker, budget and rate-limit state lives. @default memoryStore() */
  store?: StateStore;
  /** The policy key of a request. @default its origin (`https://api.example.com:443`) */
  key?: PolicyKey;
  /**
   * How long an attempt must wait before it is sent, in ms (a provider's
   * window too spent for a request of this size); `0` or `undefined`: go.
   * Asked after the rate limiter, and again after each wait.
   * @default none
   */
  hold?: HoldHook;
}

/** What a {@link HoldHook} is asked about: the request and its policy key. */
export interface HoldRequest extends PolicyRequest {
  readonly key: string;
}

/**
 * The `hold` option: ms the attempt must wait before it is sent, given the
 * clock's `now`. The wait is a `wait` event (`reason: 'rate-limit'`), within
 * the deadline (a longer hold is a `RateLimitedError`) and under the caller's
 * signal. A hook that throws, or answers anything but a finite number > 0,
 * holds nothing.
 */
export type HoldHook = (request: HoldRequest, now: number) => number | undefined;

/** The policies of one client; absent ones are off. */
export interface Policies {
  readonly key: PolicyKey;
  readonly breaker: CircuitBreaker | undefined;
  readonly budget: RetryBudget | undefined;
  readonly limiter: RateLimiter | undefined;
  readonly concurrency: ConcurrencyLimiter | undefined;
  readonly hold: HoldHook | undefined;
}

const ORIGIN = /^([a-z][a-z0-9+.-]*:)\/\/(?:[^/?#@]*@)?([^/?#]*)/i;

/**
 * The origin of a URL, as the policy key: scheme and host lowercased, the
 * userinfo dropped, the port kept as written. Falls back to `new URL` only
 * for inputs the fast path does not recognise.
 */
export function originKey(request: PolicyRequest): string {
  const m = ORIGIN.exec(request.url);
  if (m !== null) return `${m[1]!.toLowerCase()}//${m[2]!.toLowerCase()}`;
  try {
    return new URL(request.url).origin;
  } catch {
    return request.url;
  }
}

/** Builds the policies once, validating every option. */
export function createPolicies(
  options: PolicyOptions,
  store: StateStore,
  clock: Clock,
  onStateChange: ((change: BreakerStateChange) => void) | undefined,
): Policies {
  if (options.key !== undefined && typeof options.key !== 'function') {
    throw new TypeError(`key must be a function (request) => string, got ${describe(options.key)}`);
  }
  if (options.hold !== undefined && typeof options.hold !== 'function') {
    throw new TypeError(`hold must be a function, got ${describe(options.hold)}`);
  }
  const breaker = resolveBreakerOptions(options.breaker);
  const budget = resolveBudgetOptions(options.budget);
  const rateLimit = resolveRateLimitOptions(options.rateLimit);
  const concurrency = resolveConcurrencyOptions(options.concurrency);
  return Object.freeze({
    key: options.key ?? originKey,
    breaker:
      breaker === false ? undefined : new CircuitBreaker(breaker, store, clock, onStateChange),
    budget: budget === false ? undefined : new RetryBudget(budget, store, clock),
    limiter: rateLimit === false ? undefined : new RateLimiter(rateLimit, store, clock),
    concurrency: concurrency === false ? undefined : new ConcurrencyLimiter(concurrency, clock),
    hold: options.hold,
  });
}
