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
} from './breaker/breaker.js';
import { type BudgetOptions, RetryBudget, resolveBudgetOptions } from './budget/budget.js';
import {
  ConcurrencyLimiter,
  type ConcurrencyOptions,
  resolveConcurrencyOptions,
} from './concurrency.js';
import { RateLimiter, type RateLimitOptions, resolveRateLimitOptions } from './rate/limiter.js';

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

/** Index of the end of the authority of `url` (its first `/`, `?` or `#` after `from`), or its length. */
function authorityEnd(url: string, from: number): number {
  for (let i = from; i < url.length; i++) if (isAuthorityEnd(url, i)) return i;
  return url.length;
}

/** Index just past `scheme://` when `url` starts with an RFC 3986 scheme and `//`, else -1. */
function schemeEnd(url: string): number {
  const first = url.charCodeAt(0) | 0x20;
  if (first < 0x61 || first > 0x7a) return -1; // a letter
  for (let i = 1; i < url.length; i++) {
    const c = url.charCodeAt(i);
    if (c === 0x3a)
      return url.charCodeAt(i + 1) === 0x2f && url.charCodeAt(i + 2) === 0x2f ? i + 3 : -1;
    const l = c | 0x20;
    // letters, digits, '+', '-', '.'
    if (
      !(
        (l >= 0x61 && l <= 0x7a) ||
        (c >= 0x30 && c <= 0x39) ||
        c === 0x2b ||
        c === 0x2d ||
        c === 0x2e
      )
    ) {
      return -1;
    }
  }
  return -1;
}

/** The origin key of a URL whose `scheme://authority` ends at `end` (`start`: past the `//`). */
function keyOf(url: string, start: number, end: number): string {
  // The userinfo is everything up to the authority's first '@'.
  const at = url.indexOf('@', start);
  const host = at !== -1 && at < end ? at + 1 : start;
  return `${url.slice(0, start).toLowerCase()}${url.slice(host, end).toLowerCase()}`;
}

/** Falls back to `new URL` for inputs the scan does not recognise. */
function parsedOrigin(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
}

/**
 * The origin of a URL, as the policy key: scheme and host lowercased, the
 * userinfo dropped, the port kept as written. Falls back to `new URL` only
 * for inputs that do not start with `scheme://`.
 */
export function originKey(request: PolicyRequest): string {
  const url = request.url;
  const start = schemeEnd(url);
  if (start === -1) return parsedOrigin(url);
  return keyOf(url, start, authorityEnd(url, start));
}

/** Origins remembered by one client's key function before it starts over. */
const ORIGIN_CACHE_SIZE = 256;

/**
 * {@link originKey} for one client, remembered per `scheme://authority`
 * prefix (at most {@link ORIGIN_CACHE_SIZE} of them): the same key string
 * for every request of an origin, so the policies' maps hash it once.
 */
export function cachedOriginKey(): PolicyKey {
  const cache = new Map<string, string>();
  // The last origin seen: most clients call one, and then no scan, slice or hash is needed.
  let lastPrefix = '';
  let lastKey = '';
  return (request) => {
    // The undici adapters know the `scheme://authority` apart (request.ts, `origin`): compared
    // as it is, the URL they built from it need not be flattened.
    const origin = (request as { origin?: string }).origin;
    if (origin !== undefined && origin === lastPrefix) return lastKey;
    const url = request.url;
    const n = lastPrefix.length;
    if (n > 0 && url.startsWith(lastPrefix) && (url.length === n || isAuthorityEnd(url, n))) {
      return lastKey;
    }
    const start = schemeEnd(url);
    if (start === -1) return parsedOrigin(url);
    const end = authorityEnd(url, start);
    const prefix = url.slice(0, end);
    let key = cache.get(prefix);
    if (key === undefined) {
      key = keyOf(url, start, end);
      if (cache.size >= ORIGIN_CACHE_SIZE) cache.clear();
      cache.set(prefix, key);
    }
    lastPrefix = prefix;
    lastKey = key;
    return key;
  };
}

/** Whether the character at `i` of `url` ends an authority: `/`, `?` or `#`. */
function isAuthorityEnd(url: string, i: number): boolean {
  const c = url.charCodeAt(i);
  return c === 0x2f || c === 0x3f || c === 0x23;
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
  const policies: { -readonly [K in keyof Policies]: Policies[K] } = {
    key: options.key ?? cachedOriginKey(),
    breaker:
      breaker === false ? undefined : new CircuitBreaker(breaker, store, clock, onStateChange),
    budget: budget === false ? undefined : new RetryBudget(budget, store, clock),
    limiter: rateLimit === false ? undefined : new RateLimiter(rateLimit, store, clock),
    concurrency: concurrency === false ? undefined : new ConcurrencyLimiter(concurrency, clock),
    hold: options.hold,
  };
  return Object.freeze(policies);
}
