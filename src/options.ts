/**
 * The client's options, resolved once when the client is built: shorthands
 * expanded, every field validated (a TypeError/RangeError naming the option
 * and the value), the result frozen. Nothing here runs per request except the
 * merge of per-request overrides, and only when a request carries them.
 */
import type { StaunchListeners } from './events.js';
import type { Clock, Random } from './internal/clock.js';
import { checkNumber, checkObject, describe, keysOf } from './internal/validate.js';
import type { Policies } from './policy/policies.js';
import { type Backoff, exponentialBackoff } from './retry/backoff.js';
import type { StatusClassifier } from './retry/classify.js';
import { MAX_DELAY, type PacingReader } from './retry/server-delay.js';

/** Retry options. `retry: 5` means `{ attempts: 5 }`; `retry: false` means one attempt. */
export interface RetryOptions {
  /** Total attempts, the first included. @default 3 */
  attempts?: number;
  /** Methods replayed after a maybe-sent failure (RFC 9110 §9.2.2 idempotent methods). @default ['GET','HEAD','OPTIONS','TRACE','PUT','DELETE','QUERY'] */
  methods?: readonly string[];
  /** Statuses worth retrying, each from 400 to 599. @default [408, 429, 500, 502, 503, 504, 529] */
  statuses?: readonly number[];
  /** Delay before each retry when the server gives no hint. @default exponentialBackoff({ base: 250, cap: 20_000, jitter: 'decorrelated' }) */
  backoff?: Backoff;
  /** A server asking to wait longer than this (ms) ends the retrying at once. @default 60_000 */
  maxRetryAfter?: number;
}

/** Deadlines in ms; `false` disables one. */
export interface TimeoutOptions {
  /** One attempt, until its response headers arrive. @default 60_000 */
  attempt?: number | false;
  /** All attempts and waits, until a response is handed back. @default 300_000 */
  total?: number | false;
}

export interface IdempotencyOptions {
  /** The header that carries the key. @default 'Idempotency-Key' */
  header?: string;
  /** Give a POST/PATCH (any non-idempotent method) without a key a fresh UUID, the same on every attempt. @default false */
  auto?: boolean;
  /**
   * A 422 to a keyed request (its key used before with another payload, the
   * Idempotency-Key draft): `'return'` hands the response back as any status;
   * `'throw'` throws `IdempotencyKeyMismatchError` instead. Never retried either way.
   * @default 'return'
   */
  mismatch?: 'return' | 'throw';
}

/** @internal */
export interface ResolvedRetryOptions {
  readonly attempts: number;
  readonly methods: ReadonlySet<string>;
  readonly statuses: ReadonlySet<number>;
  readonly backoff: Backoff;
  readonly maxRetryAfter: number;
}

/** @internal */
export interface ResolvedTimeoutOptions {
  /** ms; Infinity when disabled. */
  readonly attempt: number;
  readonly total: number;
}

/** @internal */
export interface ResolvedIdempotencyOptions {
  readonly header: string;
  /** `header` in lower case (undici's header records), computed once. */
  readonly lower: string;
  readonly auto: boolean;
  readonly mismatch: 'return' | 'throw';
}

export const DEFAULT_METHODS: readonly string[] = Object.freeze([
  'GET',
  'HEAD',
  'OPTIONS',
  'TRACE',
  'PUT',
  'DELETE',
  'QUERY',
]);
export const DEFAULT_STATUSES: readonly number[] = Object.freeze([
  408, 429, 500, 502, 503, 504, 529,
]);

const RETRY_KEYS = keysOf<RetryOptions>()([
  'attempts',
  'methods',
  'statuses',
  'backoff',
  'maxRetryAfter',
]);

export const DEFAULT_RETRY: ResolvedRetryOptions = Object.freeze({
  attempts: 3,
  methods: new Set(DEFAULT_METHODS),
  statuses: new Set(DEFAULT_STATUSES),
  backoff: exponentialBackoff({ jitter: 'decorrelated' }),
  maxRetryAfter: 60_000,
});

export const DEFAULT_TIMEOUT: ResolvedTimeoutOptions = Object.freeze({
  attempt: 60_000,
  total: 300_000,
});

/** Resolves `retry`, on top of `base` (the client's options, for per-request overrides). */
export function resolveRetryOptions(
  input: RetryOptions | number | boolean | undefined,
  base: ResolvedRetryOptions = DEFAULT_RETRY,
  path = 'retry',
): ResolvedRetryOptions {
  if (input === undefined || input === true) return base;
  if (input === false) return Object.freeze({ ...base, attempts: 1 });
  if (typeof input === 'number') {
    return Object.freeze({ ...base, attempts: checkAttempts(path, input) });
  }
  const o = checkObject(path, input, RETRY_KEYS);
  const resolved = { ...base };
  if (o.attempts !== undefined) resolved.attempts = checkAttempts(`${path}.attempts`, o.attempts);
  if (o.methods !== undefined) {
    if (!Array.isArray(o.methods) || o.methods.some((m) => typeof m !== 'string' || m === '')) {
      throw new TypeError(
        `${path}.methods must be an array of method names, got ${describe(o.methods)}`,
      );
    }
    resolved.methods = new Set(o.methods.map((m: string) => m.toUpperCase()));
  }
  if (o.statuses !== undefined) {
    if (!Array.isArray(o.statuses)) {
      throw new TypeError(
        `${path}.statuses must be an array of statuses, got ${describe(o.statuses)}`,
      );
    }
    resolved.statuses = new Set(
      o.statuses.map((s: unknown, i: number) =>
        // A status below 400 is not a failure: the executor hands it back before any retry.
        checkNumber(`${path}.statuses[${i}]`, s, { min: 400, max: 599, integer: true }),
      ),
    );
  }
  if (o.backoff !== undefined) {
    if (typeof o.backoff !== 'function') {
      throw new TypeError(`${path}.backoff must be a function, got ${describe(o.backoff)}`);
    }
    resolved.backoff = o.backoff as Backoff;
  }
  if (o.maxRetryAfter !== undefined) {
    resolved.maxRetryAfter = checkNumber(`${path}.maxRetryAfter`, o.maxRetryAfter, {
      min: 0,
      max: MAX_DELAY,
    });
  }
  return Object.freeze(resolved);
}

function checkAttempts(path: string, value: unknown): number {
  return checkNumber(path, value, { min: 1, max: 100, integer: true });
}

function checkDuration(path: string, value: unknown): number {
  if (value === false) return Number.POSITIVE_INFINITY;
  return checkNumber(path, value, { min: 0, exclusiveMin: true, max: MAX_DELAY });
}

/** Resolves `timeout` on top of `base`. A number is `{ total: n }`; `false` disables both. */
export function resolveTimeoutOptions(
  input: TimeoutOptions | number | false | undefined,
  base: ResolvedTimeoutOptions = DEFAULT_TIMEOUT,
  path = 'timeout',
): ResolvedTimeoutOptions {
  if (input === undefined) return base;
  if (input === false) return Object.freeze({ attempt: Infinity, total: Infinity });
  if (typeof input === 'number') {
    return Object.freeze({ ...base, total: checkDuration(path, input) });
  }
  const o = checkObject(path, input, ['attempt', 'total']);
  return Object.freeze({
    attempt: o.attempt === undefined ? base.attempt : checkDuration(`${path}.attempt`, o.attempt),
    total: o.total === undefined ? base.total : checkDuration(`${path}.total`, o.total),
  });
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** A header name (an RFC 9110 token), else a TypeError naming `path`. */
export function checkHeaderName(path: string, value: unknown): string {
  if (typeof value !== 'string' || !TOKEN.test(value)) {
    throw new TypeError(`${path} must be a header name, got ${describe(value)}`);
  }
  return value;
}

const DEFAULT_IDEMPOTENCY: ResolvedIdempotencyOptions = Object.freeze({
  header: 'Idempotency-Key',
  lower: 'idempotency-key',
  auto: false,
  mismatch: 'return',
});

export function resolveIdempotencyOptions(
  input: IdempotencyOptions | undefined,
): ResolvedIdempotencyOptions {
  if (input === undefined) {
    return DEFAULT_IDEMPOTENCY;
  }
  const o = checkObject('idempotency', input, ['header', 'auto', 'mismatch']);
  const header = checkHeaderName('idempotency.header', o.header ?? 'Idempotency-Key');
  const auto = o.auto ?? false;
  if (typeof auto !== 'boolean') {
    throw new TypeError(`idempotency.auto must be a boolean, got ${describe(auto)}`);
  }
  const mismatch = o.mismatch ?? 'return';
  if (mismatch !== 'return' && mismatch !== 'throw') {
    throw new TypeError(
      `idempotency.mismatch must be 'return' or 'throw', got ${describe(mismatch)}`,
    );
  }
  return Object.freeze({ header, lower: header.toLowerCase(), auto, mismatch });
}

export function checkClock(input: unknown): Clock | undefined {
  if (input === undefined) return undefined;
  const c = input as Partial<Clock>;
  if (
    typeof c !== 'object' ||
    c === null ||
    typeof c.now !== 'function' ||
    typeof c.sleep !== 'function'
  ) {
    throw new TypeError(`clock must have now() and sleep(ms, signal), got ${describe(input)}`);
  }
  return input as Clock;
}

export function checkRandom(input: unknown): Random | undefined {
  if (input === undefined) return undefined;
  if (typeof input !== 'function') {
    throw new TypeError(`random must be a function returning [0, 1), got ${describe(input)}`);
  }
  return input as Random;
}

/**
 * Hedged requests: while an attempt has no response after `delay`, the same
 * request is sent again; the first response wins, the others are aborted.
 * Replayable requests only, paid from the retry budget (docs/hedging.md).
 */
export interface HedgeOptions {
  /**
   * ms without a response before a hedge is sent; `'auto'`: the `percentile`
   * of the key's observed time to response headers (no hedge until 20 successes were seen).
   * @default 'auto'
   */
  delay?: number | 'auto';
  /** Hedges in flight beside the attempt at most. @default 1 */
  max?: number;
  /** With `delay: 'auto'`: the percentile of the observed latency, in (0, 1]. @default 0.95 */
  percentile?: number;
  /** With `delay: 'auto'`: the shortest delay, in ms. @default 10 */
  minDelay?: number;
}

/** @internal `hedge` resolved: what the executor reads (`LogicalRequest.hedge`). */
export interface ResolvedHedgeOptions {
  readonly delay: number | 'auto';
  readonly max: number;
  readonly percentile: number;
  readonly minDelay: number;
}

export const DEFAULT_HEDGE: ResolvedHedgeOptions = Object.freeze({
  delay: 'auto',
  max: 1,
  percentile: 0.95,
  minDelay: 10,
});

const HEDGE_KEYS = keysOf<HedgeOptions>()(['delay', 'max', 'percentile', 'minDelay']);

/**
 * Resolves `hedge` (named `path` in errors) on top of `base`: `undefined`
 * keeps `base`, `false` is no hedging (`undefined`), an object overrides
 * `base`'s fields (the defaults' when `base` is none).
 */
export function resolveHedgeOptions(
  input: HedgeOptions | false | undefined,
  path = 'hedge',
  base?: ResolvedHedgeOptions,
): ResolvedHedgeOptions | undefined {
  if (input === undefined) return base;
  if (input === false) return undefined;
  const o = checkObject(path, input, HEDGE_KEYS) as HedgeOptions;
  const from = base ?? DEFAULT_HEDGE;
  let delay = from.delay;
  if (o.delay !== undefined && o.delay !== 'auto') {
    delay = checkNumber(`${path}.delay`, o.delay, { min: 0, exclusiveMin: true, max: MAX_DELAY });
  } else if (o.delay === 'auto') delay = 'auto';
  const max =
    o.max === undefined
      ? from.max
      : checkNumber(`${path}.max`, o.max, { min: 1, max: 10, integer: true });
  const percentile =
    o.percentile === undefined
      ? from.percentile
      : checkNumber(`${path}.percentile`, o.percentile, { min: 0, exclusiveMin: true, max: 1 });
  const minDelay =
    o.minDelay === undefined
      ? from.minDelay
      : checkNumber(`${path}.minDelay`, o.minDelay, { min: 0, max: MAX_DELAY });
  return Object.freeze({ delay, max, percentile, minDelay });
}

/** What an executor is built with: options resolved once by the client, shared by its adapters. */
export interface ExecutorOptions {
  clock: Clock;
  random: Random;
  on: StaunchListeners;
  /** Per-key policies; absent ones are off. */
  policies?: Policies | undefined;
  /** Refines the retry table for failed statuses (the `classify` client option). */
  classify?: StatusClassifier | undefined;
  /** Reads pacing headers beyond the standard ones (the `pacing` client option). */
  pacing?: PacingReader | undefined;
  /** A keyed 422: handed back, or thrown (the `idempotency.mismatch` client option). @default 'return' */
  mismatch?: 'return' | 'throw' | undefined;
}
