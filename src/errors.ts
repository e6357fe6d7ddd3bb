/**
 * The errors staunch creates. Each has a stable `code`, keeps the error that
 * caused it in `cause`, and matches `instanceof` across two installed copies of
 * staunch (the brand is a `Symbol.for` key, not the class identity).
 */

const BRAND: unique symbol = Symbol.for('staunch.error') as never;

/** Every `code` a staunch error can carry. */
export type StaunchErrorCode =
  | 'STAUNCH_ERROR'
  | 'STAUNCH_DEADLINE'
  | 'STAUNCH_NETWORK'
  | 'STAUNCH_CIRCUIT_OPEN'
  | 'STAUNCH_RATE_LIMITED'
  | 'STAUNCH_QUEUE_FULL'
  | 'STAUNCH_QUEUE_TIMEOUT'
  | 'STAUNCH_SSRF_BLOCKED'
  | 'STAUNCH_EVENT_STREAM'
  | 'STAUNCH_RESUME'
  | 'STAUNCH_IDEMPOTENCY_KEY_MISMATCH';

/** Where a failure happened; every field is optional and already redacted. */
export interface StaunchErrorOptions {
  cause?: unknown;
  /** The request method, upper case. */
  method?: string;
  /** The request URL with credentials redacted. */
  url?: string;
  /** Attempts made for the logical request before this error. */
  attempts?: number;
}

/**
 * Base class of every error staunch throws.
 * @example if (isStaunchError(err)) console.log(err.code)
 */
export class StaunchError extends Error {
  /** The `code` carried by instances of this class. */
  static readonly code: StaunchErrorCode = 'STAUNCH_ERROR';
  readonly code: StaunchErrorCode;
  readonly method: string | undefined;
  readonly url: string | undefined;
  readonly attempts: number | undefined;

  constructor(message: string, options: StaunchErrorOptions = {}) {
    super(message, 'cause' in options ? { cause: options.cause } : undefined);
    this.code = (new.target as typeof StaunchError).code;
    this.method = options.method;
    this.url = options.url;
    this.attempts = options.attempts;
    Object.defineProperty(this, BRAND, { value: true });
  }

  static override [Symbol.hasInstance](value: unknown): boolean {
    if (!isStaunchError(value)) return false;
    return this.code === 'STAUNCH_ERROR' || value.code === this.code;
  }

  /** A plain, redacted form for structured logs. */
  toJSON(): Record<string, unknown> {
    const json: Record<string, unknown> = {
      name: this.name,
      code: this.code,
      message: this.message,
    };
    for (const [key, value] of Object.entries(this)) if (value !== undefined) json[key] = value;
    if (this.cause !== undefined) json.cause = describeCause(this.cause);
    return json;
  }
}

function describeCause(cause: unknown): unknown {
  if (typeof cause !== 'object' || cause === null) return String(cause);
  const { name, message, code } = cause as { name?: unknown; message?: unknown; code?: unknown };
  const out: Record<string, unknown> = {};
  if (typeof name === 'string') out.name = name;
  if (typeof message === 'string') out.message = message;
  if (typeof code === 'string' || typeof code === 'number') out.code = code;
  return out;
}

/** True for any error made by any installed copy of staunch. */
export function isStaunchError(value: unknown): value is StaunchError {
  return (
    typeof value === 'object' && value !== null && (value as { [BRAND]?: unknown })[BRAND] === true
  );
}

/** Which deadline ran out. */
export type DeadlineScope = 'attempt' | 'total';

/**
 * A deadline ran out: `timeout.attempt` (to response headers) or
 * `timeout.total` (all attempts and waits). The in-flight attempt is aborted.
 * Its `name` is `TimeoutError`, as `AbortSignal.timeout()` uses.
 */
export class DeadlineExceededError extends StaunchError {
  static override readonly code: StaunchErrorCode = 'STAUNCH_DEADLINE';
  /** Which deadline expired. */
  readonly timeout: DeadlineScope;
  /** Its length in ms. */
  readonly ms: number;
  constructor(message: string, timeout: DeadlineScope, ms: number, options?: StaunchErrorOptions) {
    super(message, options);
    this.timeout = timeout;
    this.ms = ms;
  }
}

/**
 * The transport failed (refused, reset, DNS, TLS…). `cause` is the transport's
 * own error, so `err.cause.code` (`ECONNREFUSED`, `UND_ERR_SOCKET`…) stays
 * reachable. `maybeSent` says whether the server may have received the request.
 */
export class NetworkError extends StaunchError {
  static override readonly code: StaunchErrorCode = 'STAUNCH_NETWORK';
  /** False only when the connection provably never carried the request. */
  readonly maybeSent: boolean;
  constructor(message: string, maybeSent: boolean, options?: StaunchErrorOptions) {
    super(message, options);
    this.maybeSent = maybeSent;
  }
}

/** The circuit for this key is open: failed fast without touching the network. */
export class CircuitOpenError extends StaunchError {
  static override readonly code: StaunchErrorCode = 'STAUNCH_CIRCUIT_OPEN';
  /** Milliseconds until the circuit admits its next probe. */
  readonly retryAfter: number;
  constructor(message: string, retryAfter: number, options?: StaunchErrorOptions) {
    super(message, options);
    this.retryAfter = retryAfter;
  }
}

/** The client-side rate limiter could not grant a token within the deadline. */
export class RateLimitedError extends StaunchError {
  static override readonly code: StaunchErrorCode = 'STAUNCH_RATE_LIMITED';
  /** Milliseconds until a token would have been available. */
  readonly retryAfter: number;
  constructor(message: string, retryAfter: number, options?: StaunchErrorOptions) {
    super(message, options);
    this.retryAfter = retryAfter;
  }
}

/** The concurrency queue for this key is full. */
export class QueueFullError extends StaunchError {
  static override readonly code: StaunchErrorCode = 'STAUNCH_QUEUE_FULL';
}

/** A request waited in the concurrency queue past `queueTimeout` or its deadline. */
export class QueueTimeoutError extends StaunchError {
  static override readonly code: StaunchErrorCode = 'STAUNCH_QUEUE_TIMEOUT';
}

/**
 * The server answered 422 to a keyed request: its idempotency key was used
 * before with another payload (the Idempotency-Key draft). Sending it again
 * cannot help; a new payload needs a new key. Thrown only with
 * `idempotency.mismatch: 'throw'`; by default the 422 is returned.
 */
export class IdempotencyKeyMismatchError extends StaunchError {
  static override readonly code: StaunchErrorCode = 'STAUNCH_IDEMPOTENCY_KEY_MISMATCH';
  /** The status the server answered. */
  readonly status = 422;
}

/** The SSRF guard refused to connect to an address. */
export class SsrfBlockedError extends StaunchError {
  static override readonly code: StaunchErrorCode = 'STAUNCH_SSRF_BLOCKED';
}

/**
 * A deadline of `method url` ran out: the request's (`total`) or attempt
 * `attempts`'s, `ms` long. The message names which, and the option to raise.
 */
export function deadlineExceeded(
  method: string,
  url: string,
  scope: DeadlineScope,
  ms: number,
  attempts: number,
): DeadlineExceededError {
  const what = scope === 'attempt' ? `attempt ${attempts}` : 'request';
  return new DeadlineExceededError(
    `${method} ${url}: ${what} exceeded timeout.${scope} (${ms} ms)`,
    scope,
    ms,
    { method, url, attempts },
  );
}

/**
 * The transport's failure `cause` ended `method url` after `attempts`: the
 * message says its `code`, or else its message; `maybeSent` is said too, since
 * it is what a caller must know before sending the request again.
 */
export function networkFailure(
  method: string,
  url: string,
  attempts: number,
  cause: unknown,
  code: string | undefined,
  maybeSent: boolean,
): NetworkError {
  const detail = code ?? (cause instanceof Error ? cause.message : String(cause));
  const times = attempts === 1 ? '1 attempt' : `${attempts} attempts`;
  const sent = maybeSent ? ' (the request may have been sent)' : '';
  return new NetworkError(`${method} ${url} failed after ${times}: ${detail}${sent}`, maybeSent, {
    method,
    url,
    attempts,
    cause,
  });
}

/** A keyed `method url` was answered 422 after `attempts`: its key was used before with another payload. */
export function idempotencyKeyMismatch(
  method: string,
  url: string,
  attempts: number,
): IdempotencyKeyMismatchError {
  const message = `${method} ${url}: 422, the idempotency key was used before with another payload; a new payload needs a new key`;
  return new IdempotencyKeyMismatchError(message, { method, url, attempts });
}

// `name` lives on each prototype as a plain writable value (not a getter), so
// that loggers and test runners that copy or assign it keep working.
for (const [cls, name] of [
  [StaunchError, 'StaunchError'],
  [DeadlineExceededError, 'TimeoutError'],
  [NetworkError, 'NetworkError'],
  [CircuitOpenError, 'CircuitOpenError'],
  [RateLimitedError, 'RateLimitedError'],
  [QueueFullError, 'QueueFullError'],
  [QueueTimeoutError, 'QueueTimeoutError'],
  [SsrfBlockedError, 'SsrfBlockedError'],
] as const) {
  Object.defineProperty(cls.prototype, 'name', { value: name, writable: true, configurable: true });
}
