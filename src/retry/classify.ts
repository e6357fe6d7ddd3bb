/**
 * Is an outcome safe to retry? The table of DESIGN.md, as code.
 *
 * | outcome                                              | retried for        |
 * | ---------------------------------------------------- | ------------------ |
 * | connection never established                         | every method       |
 * | 429, 408, 503 with a valid Retry-After               | every method       |
 * | 422 to a keyed request (Idempotency-Key draft)       | never              |
 * | `x-should-retry: true` / `false`                     | server's word wins |
 * | 409 to a keyed request (Idempotency-Key draft)       | every method       |
 * | other statuses in `retry.statuses`, maybe-sent error | replayable only    |
 * | any other status                                     | never              |
 */
import { DeadlineExceededError, networkFailure } from '../errors.js';
import { scrubError } from '../internal/redact.js';
import {
  type HeaderSource,
  parseRetryAfter,
  parseRetryAfterMs,
  readHeader,
} from './server-delay.js';

/** Who may retry an outcome: every request, only replayable ones, or none. */
export type RetryScope = 'any' | 'replayable' | 'never';

/**
 * What a transport error proves about the request:
 * - `unsent`: the connection was never established, nothing was sent;
 * - `maybe-sent`: the server may have received (and acted on) the request;
 * - `fatal`: retrying cannot help (an invalid certificate).
 */
export type ErrorKind = 'unsent' | 'maybe-sent' | 'fatal';

/** Error codes (Node, undici) that prove the connection never carried the request. */
export const UNSENT_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EAI_NONAME',
  'EAI_FAIL',
  'ENETUNREACH',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETDOWN',
  'EADDRNOTAVAIL',
  'UND_ERR_CONNECT_TIMEOUT',
  'ERR_SSL_WRONG_VERSION_NUMBER',
  'ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION',
  'ERR_TLS_HANDSHAKE_TIMEOUT',
]);

/**
 * Failures the same request meets again on every attempt, so they are not
 * retried: certificate errors (the connection was never established, but the
 * same certificate fails again) and a URL that cannot be parsed.
 */
export const FATAL_CODES: ReadonlySet<string> = new Set([
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'CERT_REVOKED',
  'CERT_UNTRUSTED',
  // staunch/undici (issue 4): the same request meets these again on every attempt.
  'STAUNCH_SSRF_BLOCKED', // the SSRF guard refused the address: it will refuse it again
  'ERR_TOO_MANY_REDIRECTS', // staunch/undici's redirect limit: the same chain again
  'UND_ERR_NOT_SUPPORTED',
  'UND_ERR_REQ_CONTENT_LENGTH_MISMATCH', // the body does not match its content-length
  'UND_ERR_RES_EXCEEDED_MAX_SIZE', // the response is larger than maxResponseSize
  // undici's interceptors.retry() below staunch already retried a status and gave up:
  // retrying on top would multiply its attempts (docs/undici.md).
  'UND_ERR_REQ_RETRY',
  'UND_ERR_DESTROYED', // the dispatcher is closed or destroyed: it stays so
  'UND_ERR_CLOSED',
]);

/**
 * Codes of a request refused before anything was sent because the caller
 * built it wrong (a URL that does not parse, an invalid header, an option of
 * the wrong type). Fatal, and more: not a failure of the upstream, so the
 * breaker does not count it, and it is thrown as it is (see
 * {@link isInvalidRequest}).
 */
export const INVALID_CODES: ReadonlySet<string> = new Set([
  'ERR_INVALID_URL',
  'UND_ERR_INVALID_ARG', // undici refused the request's options before sending
  'ERR_INVALID_ARG_TYPE',
  'ERR_INVALID_ARG_VALUE',
  'ERR_INVALID_HTTP_TOKEN',
  'ERR_INVALID_CHAR',
  'ERR_HTTP_INVALID_HEADER_VALUE',
  'ERR_UNESCAPED_CHARACTERS',
]);

/**
 * Set to `true` (non-enumerable) by an adapter on an error that is the
 * caller's own mistake: the runtime refused the request before sending it
 * (a WHATWG fetch throws a bare `TypeError` without a code for a GET with a
 * body, an invalid header, credentials in the URL, a blocked port…; only the
 * adapter, which knows the request, can tell; see `refusedByFetch`).
 * `Symbol.for`, so that two installed copies of staunch agree.
 */
export const INVALID_REQUEST: unique symbol = Symbol.for('staunch.invalidRequest') as never;

/** Marks `error` as the caller's mistake ({@link INVALID_REQUEST}); returns it. */
export function markInvalid<E>(error: E): E {
  if (typeof error === 'object' && error !== null) {
    try {
      Object.defineProperty(error, INVALID_REQUEST, { value: true, configurable: true });
    } catch {
      // A frozen error stays unmarked: it is then classified by its code alone.
    }
  }
  return error;
}

/**
 * True if `error` is the caller's own mistake: marked by an adapter, or with a
 * code in {@link INVALID_CODES}. Such an error is never retried, is no
 * failure of the upstream (the breaker does not count it, the budget is not
 * charged), and is thrown as the runtime made it, not wrapped in a
 * `NetworkError` (nothing was sent).
 */
export function isInvalidRequest(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  try {
    if ((error as { [INVALID_REQUEST]?: unknown })[INVALID_REQUEST] === true) return true;
  } catch {
    return false;
  }
  const code = errorCode(error);
  return code !== undefined && INVALID_CODES.has(code);
}

/** Bounds on the walk of `errorCode`: chain depth and errors visited in all. */
const MAX_DEPTH = 8;
const MAX_VISITS = 64;

/**
 * The first string `code` found on an error, then on each of its aggregated
 * `errors` (in order, as a happy-eyeballs `AggregateError` lists them), then on
 * its `cause` chain. Cycles, deep chains and throwing getters end the search.
 */
export function errorCode(error: unknown): string | undefined {
  const seen = new Set<object>();
  const visit = (value: unknown, depth: number): string | undefined => {
    if (typeof value !== 'object' || value === null) return undefined;
    if (depth > MAX_DEPTH || seen.size >= MAX_VISITS || seen.has(value)) return undefined;
    seen.add(value);
    try {
      const code = (value as { code?: unknown }).code;
      if (typeof code === 'string') return code;
      const inner = (value as { errors?: unknown }).errors;
      if (Array.isArray(inner)) {
        for (const nested of inner) {
          const found = visit(nested, depth + 1);
          if (found !== undefined) return found;
        }
      }
      return visit((value as { cause?: unknown }).cause, depth + 1);
    } catch {
      // A throwing getter or a revoked proxy: nothing more to learn here.
      return undefined;
    }
  };
  return visit(error, 0);
}

/**
 * Set to `true` (non-enumerable) by a transport on an error that is the stale
 * keep-alive race: the request went out on a reused keep-alive connection that
 * the server had just closed, and failed before any byte of a response (see
 * `staunch/undici`). It stays a maybe-sent failure (a non-replayable request
 * is not sent again), but a replayable one is sent again at once, without a
 * backoff wait, and it counts neither against the breaker nor the budget: it
 * says nothing about the upstream's health. `Symbol.for`, so that two
 * installed copies of staunch agree.
 */
export const STALE_CONNECTION: unique symbol = Symbol.for('staunch.staleConnection') as never;

/** True if `error`, or an error on its `cause` chain, carries the `STALE_CONNECTION` mark. */
export function isStaleConnection(error: unknown): boolean {
  let value = error;
  for (let depth = 0; depth <= MAX_DEPTH; depth++) {
    if (typeof value !== 'object' || value === null) return false;
    try {
      if ((value as { [STALE_CONNECTION]?: unknown })[STALE_CONNECTION] === true) return true;
      value = (value as { cause?: unknown }).cause;
    } catch {
      return false;
    }
  }
  return false;
}

/**
 * Classifies a transport error by its `code` (never by message text). Unknown
 * → maybe sent. The caller's own mistakes ({@link isInvalidRequest}) are fatal.
 */
export function classifyError(error: unknown): ErrorKind {
  if (isInvalidRequest(error)) return 'fatal';
  const code = errorCode(error);
  if (code === undefined) return 'maybe-sent';
  if (UNSENT_CODES.has(code)) return 'unsent';
  if (FATAL_CODES.has(code)) return 'fatal';
  return 'maybe-sent';
}

/**
 * What the caller is thrown for `error`, a failure without a response that ends
 * `request` (its `url` redacted) after `attempts`: a `NetworkError`, scrubbed of
 * the request's secrets. A deadline, or the caller's own mistake, as it is.
 */
export function thrownFor(
  error: unknown,
  request: { readonly method: string; secrets(): readonly string[] },
  url: string,
  attempts: number,
): unknown {
  if (error instanceof DeadlineExceededError) return error;
  scrubError(error, request.secrets());
  if (isInvalidRequest(error)) return error; // the caller's mistake, as the runtime made it
  const maybeSent = classifyError(error) === 'maybe-sent';
  return networkFailure(request.method, url, attempts, error, errorCode(error), maybeSent);
}

/** Who may retry a response with this status, given the configured retryable `statuses`. */
export function classifyStatus(
  status: number,
  headers: HeaderSource,
  statuses: ReadonlySet<number>,
  keyed = false,
): RetryScope {
  // Idempotency-Key draft: a 422 to a keyed request is its key reused with another payload;
  // the same request meets it again on every attempt, whatever else the server says.
  if (keyed && status === 422) return 'never';
  // The OpenAI and Anthropic APIs send x-should-retry: the server's word wins either way.
  const should = readHeader(headers, 'x-should-retry');
  if (should === 'true') return 'any';
  if (should === 'false') return 'never';
  // Idempotency-Key draft: a 409 to a keyed request is its key's first request still in
  // flight. Nothing was processed: the same key is sent again once it is done, as for a 429.
  if (keyed && status === 409) return 'any';
  if (!statuses.has(status)) return 'never';
  // RFC 9110 §15.5.20 (429), §15.5.9 (408): the server did not process the request.
  if (status === 429 || status === 408) return 'any';
  // RFC 9110 §15.6.4: a 503 with Retry-After is the server pacing us, not failing. Only
  // a valid hint counts: a malformed one is ignored, as everywhere else.
  if (
    status === 503 &&
    (parseRetryAfter(readHeader(headers, 'retry-after')) !== undefined ||
      parseRetryAfterMs(readHeader(headers, 'retry-after-ms')) !== undefined)
  ) {
    return 'any';
  }
  return 'replayable';
}

/**
 * Fetch standard §2.9 "bad port": ports a fetch refuses to connect to
 * (https://fetch.spec.whatwg.org/#bad-port).
 */
export const BAD_PORTS: ReadonlySet<number> = new Set([
  1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102,
  103, 104, 109, 110, 111, 113, 115, 117, 119, 123, 135, 137, 139, 143, 161, 179, 389, 427, 465,
  512, 513, 514, 515, 526, 530, 531, 532, 540, 548, 554, 556, 563, 587, 601, 636, 989, 990, 993,
  995, 1719, 1720, 1723, 2049, 3659, 4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666, 6667, 6668,
  6669, 6679, 6697, 10080,
]);

/** Schemes a fetch knows (Fetch standard §4.2 "scheme fetch"); any other is a network error. */
const FETCH_SCHEMES: ReadonlySet<string> = new Set([
  'about:',
  'blob:',
  'data:',
  'file:',
  'http:',
  'https:',
]);

/**
 * Did a WHATWG fetch refuse this request before sending anything, because
 * the caller built it wrong? Asked only once `error` came back from the
 * transport, so nothing is refused that the runtime accepted. A WHATWG
 * fetch throws a bare `TypeError` for these (no code to match, and its
 * message differs per runtime), so the request itself is checked, with the
 * runtime's own `Request` constructor where there is one: a URL that does
 * not parse or carries credentials, a scheme fetch does not know, a bad
 * port, or an init `new Request` rejects (a GET or HEAD with a body, an
 * invalid header name or value, an invalid method or mode, a stream body
 * without `duplex: 'half'` where the runtime requires it). An error that
 * carries a network code (`ECONNREFUSED`…) is never a refusal.
 */
export function refusedByFetch(url: string, init: RequestInit, error: unknown): boolean {
  const code = errorCode(error);
  if (code !== undefined && !INVALID_CODES.has(code)) return false;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return true;
  }
  if (parsed.username !== '' || parsed.password !== '') return true;
  if (!FETCH_SCHEMES.has(parsed.protocol)) return true;
  if ((parsed.protocol === 'http:' || parsed.protocol === 'https:') && parsed.port !== '') {
    if (BAD_PORTS.has(Number(parsed.port))) return true;
  }
  if (typeof Request !== 'function') return false;
  try {
    // The body is a stand-in: the check must not read (or lock) the caller's stream. A
    // stream stands in for a stream, so that a runtime that wants `duplex: 'half'` says so.
    const hasBody = init.body !== undefined && init.body !== null;
    const stream =
      hasBody && typeof ReadableStream === 'function' && init.body instanceof ReadableStream;
    const body = stream ? new ReadableStream() : hasBody ? '' : null;
    new Request(parsed.href, { ...init, body, signal: null });
    return false;
  } catch (refusal) {
    return refusal instanceof TypeError;
  }
}

/** What a `classify` option sees of a response whose status is 400 or more. */
export interface StatusOutcome {
  /** Upper-case method. */
  readonly method: string;
  /** The full URL, as given (not redacted): the hook is the caller's own code. */
  readonly url: string;
  readonly status: number;
  readonly headers: HeaderSource;
  /** The verdict of the retry table (`x-should-retry` included), which the hook may change. */
  readonly scope: RetryScope;
}

/** A `classify` option's answer: who may retry the response, and a label for the events. */
export interface StatusVerdict {
  /** Replaces the table's verdict. @default the table's */
  readonly scope?: RetryScope | undefined;
  /** Said as `kind` on the `attempt`, `retry` and `giveUp` events (at most 64 characters). */
  readonly kind?: string | undefined;
}

/** Refines the retry table for responses of 400 or more. See the `classify` client option. */
export type StatusClassifier = (outcome: StatusOutcome) => StatusVerdict | undefined;

const SCOPES: ReadonlySet<string> = new Set(['any', 'replayable', 'never']);

/**
 * The verdict for a failed status: the table's, refined by `hook` when there
 * is one. A hook that throws or answers something else than a
 * {@link StatusVerdict} leaves the table's verdict as it is.
 */
export function refineStatus(
  hook: StatusClassifier | undefined,
  outcome: StatusOutcome,
): { scope: RetryScope; kind?: string } {
  if (hook === undefined) return { scope: outcome.scope };
  let verdict: StatusVerdict | undefined;
  try {
    verdict = hook(outcome);
  } catch {
    return { scope: outcome.scope };
  }
  if (typeof verdict !== 'object' || verdict === null) return { scope: outcome.scope };
  const { scope, kind } = verdict;
  const refined = typeof scope === 'string' && SCOPES.has(scope) ? scope : outcome.scope;
  return typeof kind === 'string' && kind !== '' && kind.length <= 64
    ? { scope: refined, kind }
    : { scope: refined };
}

/**
 * The retry table's verdict for a response of `status` (400 or more) to
 * `request`, refined by `hook` (the `classify` option).
 */
export function classifyResponse(
  hook: StatusClassifier | undefined,
  request: {
    readonly method: string;
    readonly url: string;
    readonly retry: { readonly statuses: ReadonlySet<number> };
    readonly keyed?: (() => boolean) | undefined;
  },
  status: number,
  headers: HeaderSource,
): { scope: RetryScope; kind?: string; inFlight?: true; mismatch?: true } {
  const keyed = (status === 409 || status === 422) && request.keyed?.() === true;
  const scope = classifyStatus(status, headers, request.retry.statuses, keyed);
  const outcome = { method: request.method, url: request.url, status, headers, scope };
  const refined = refineStatus(hook, outcome);
  if (!keyed) return refined;
  // The draft's answers get a kind of their own on the events, unless the hook gave one.
  const kind = refined.kind ?? (status === 409 ? KEY_IN_FLIGHT : KEY_MISMATCH);
  return status === 409
    ? { ...refined, kind, inFlight: true }
    : { ...refined, kind, mismatch: true };
}

/** The `kind` of a 409 to a keyed request: its key's first request is still in flight. */
export const KEY_IN_FLIGHT = 'idempotency-key-in-flight';
/** The `kind` of a 422 to a keyed request: its key was used before with another payload. */
export const KEY_MISMATCH = 'idempotency-key-mismatch';

/**
 * `true` when a response is the server's stored answer to its idempotency
 * key's first request: `Idempotent-Replayed: true`, as Stripe marks a replay.
 */
export function replayedBy(headers: HeaderSource): true | undefined {
  return readHeader(headers, 'idempotent-replayed')?.trim().toLowerCase() === 'true'
    ? true
    : undefined;
}

/**
 * Who may retry a failure without a response, and why it is worth retrying:
 * a deadline is a `timeout`; the rest as {@link classifyError} reads it.
 */
export function errorScope(error: unknown): {
  scope: RetryScope;
  reason: 'timeout' | 'unsent' | 'maybe-sent';
} {
  if (error instanceof DeadlineExceededError) return { scope: 'replayable', reason: 'timeout' };
  const kind = classifyError(error);
  if (kind === 'unsent') return { scope: 'any', reason: 'unsent' };
  return { scope: kind === 'fatal' ? 'never' : 'replayable', reason: 'maybe-sent' };
}
