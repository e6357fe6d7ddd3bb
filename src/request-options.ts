/**
 * Per-request options and the replayable rule, shared by every adapter
 * (createFetch, the undici interceptor): one reading of `staunch: { retry,
 * timeout, idempotencyKey }`, one rule for when a request may be sent again.
 */
import { checkObject, describe, keysOf } from './internal/validate.js';
import {
  type HedgeOptions,
  type ResolvedHedgeOptions,
  type ResolvedIdempotencyOptions,
  type ResolvedRetryOptions,
  type ResolvedTimeoutOptions,
  type RetryOptions,
  resolveHedgeOptions,
  resolveRetryOptions,
  resolveTimeoutOptions,
  type TimeoutOptions,
} from './options.js';

/** staunch's per-request overrides (`init.staunch` on a fetch, `staunch` on a dispatch). */
export interface StaunchRequestOptions {
  /** Overrides the client's retry options for this request. @default the client's */
  retry?: RetryOptions | number | boolean | undefined;
  /** Overrides the client's deadlines for this request. @default the client's */
  timeout?: TimeoutOptions | number | false | undefined;
  /** Sent in the idempotency header; makes any method replayable. @default none */
  idempotencyKey?: string | undefined;
  /** Overrides the client's hedging for this request; `false`: none. @default the client's */
  hedge?: false | HedgeOptions | undefined;
}

const REQUEST_KEYS = keysOf<StaunchRequestOptions>()([
  'retry',
  'timeout',
  'idempotencyKey',
  'hedge',
]);

/** What one request runs with: the client's options, overridden where the request says. */
export interface RequestSettings {
  retry: ResolvedRetryOptions;
  timeout: ResolvedTimeoutOptions;
  /** Hedging: `undefined`, none. */
  hedge: ResolvedHedgeOptions | undefined;
  /** The idempotency key the caller gave, if any. */
  key: string | undefined;
}

/**
 * Reads `staunch` (named `path` in errors) over the client's options; a
 * top-level `shorthand` key (`init.idempotencyKey`) counts when the field has none.
 * @throws TypeError/RangeError naming the option and the value.
 */
export function readRequestOptions(
  client: {
    readonly retry: ResolvedRetryOptions;
    readonly timeout: ResolvedTimeoutOptions;
    readonly hedge: ResolvedHedgeOptions | undefined;
    readonly defaults: RequestSettings;
  },
  staunch: unknown,
  path: string,
  shorthand?: { readonly value: unknown; readonly path: string },
): RequestSettings {
  // Nothing of the request's own: the client's settings, as one shared object.
  if (staunch === undefined && shorthand?.value === undefined) return client.defaults;
  let retry = client.retry;
  let timeout = client.timeout;
  let hedge = client.hedge;
  // The shorthand's path, or (undefined) the option's own: built only for an error.
  let keyPath = shorthand?.path;
  let k: unknown = shorthand?.value;
  if (staunch !== undefined) {
    const o = checkObject(path, staunch, REQUEST_KEYS) as StaunchRequestOptions;
    if (o.retry !== undefined) retry = resolveRetryOptions(o.retry, client.retry, `${path}.retry`);
    if (o.timeout !== undefined) {
      timeout = resolveTimeoutOptions(o.timeout, client.timeout, `${path}.timeout`);
    }
    if (o.hedge !== undefined) hedge = resolveHedgeOptions(o.hedge, `${path}.hedge`, client.hedge);
    if (o.idempotencyKey !== undefined) {
      keyPath = undefined;
      k = o.idempotencyKey;
    }
  }
  if (k !== undefined && (typeof k !== 'string' || k === '')) {
    const where = keyPath ?? `${path}.idempotencyKey`;
    throw new TypeError(`${where} must be a non-empty string, got ${describe(k)}`);
  }
  return { retry, timeout, hedge, key: k as string | undefined };
}

/**
 * The caller's `signal` (`path` names it in errors): `undefined` or `null`
 * for none, else an AbortSignal, of any realm or implementation that has what
 * staunch calls on it. Anything else is a TypeError here, not a crash deep in
 * the executor.
 */
export function checkSignal(path: string, value: unknown): AbortSignal | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof AbortSignal !== 'undefined' && value instanceof AbortSignal) return value;
  const s = value as Partial<AbortSignal>;
  if (
    typeof s !== 'object' ||
    typeof s.aborted !== 'boolean' ||
    typeof s.throwIfAborted !== 'function' ||
    typeof s.addEventListener !== 'function' ||
    typeof s.removeEventListener !== 'function'
  ) {
    throw new TypeError(`${path} must be an AbortSignal, got ${describe(value)}`);
  }
  return value as AbortSignal;
}

/** What {@link idempotencyOf} decides: the key to add (if any), and whether the request may be replayed. */
export interface Idempotency {
  readonly key: string | undefined;
  readonly replayable: boolean;
}

const AS_IS: Idempotency = Object.freeze({ key: undefined, replayable: true });
const NOT_REPLAYABLE: Idempotency = Object.freeze({ key: undefined, replayable: false });

/**
 * A request method in upper case, as staunch compares it. The common
 * spellings come back as they are: `toUpperCase` is a runtime call on every
 * request otherwise (bench/instructions.mjs counts it).
 */
export function upperMethod(method: unknown): string {
  switch (method) {
    case 'GET':
    case 'POST':
    case 'PUT':
    case 'DELETE':
    case 'HEAD':
    case 'PATCH':
    case 'OPTIONS':
      return method;
    default:
      return String(method).toUpperCase();
  }
}

/**
 * The key a request is sent with (the caller's; with `idempotency.auto`, a
 * fresh one for a method outside `retry.methods` that carries no key header),
 * and whether it is replayable: an idempotent method (RFC 9110 §9.2.2, as
 * `retry.methods` lists them) or a request with an idempotency key.
 */
export function idempotencyOf<H>(
  method: string,
  settings: RequestSettings,
  idempotency: ResolvedIdempotencyOptions,
  headers: H,
  hasHeader: (headers: H, lowerName: string) => boolean,
  freshKey: () => string,
): Idempotency {
  const key = settings.key;
  if (key !== undefined) return { key, replayable: true };
  // An idempotent method (most requests): replayable as it is, its headers not looked at.
  if (settings.retry.methods.has(method) || hasHeader(headers, idempotency.lower)) return AS_IS;
  return idempotency.auto ? { key: freshKey(), replayable: true } : NOT_REPLAYABLE;
}
