/**
 * Is an outcome safe to retry? The table of DESIGN.md, as code.
 *
 * | outcome                                              | retried for        |
 * | ---------------------------------------------------- | ------------------ |
 * | connection never established                         | every method       |
 * | 429, 408, 503 with a valid Retry-After               | every method       |
 * | `x-should-retry: true` / `false`                     | server's word wins |
 * | other statuses in `retry.statuses`, maybe-sent error | replayable only    |
 * | any other status                                     | never              |
 */
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
  'ERR_INVALID_URL',
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
  'UND_ERR_INVALID_ARG', // undici refused the request's options before sending
  'UND_ERR_NOT_SUPPORTED',
  'UND_ERR_REQ_CONTENT_LENGTH_MISMATCH', // the body does not match its content-length
  'UND_ERR_RES_EXCEEDED_MAX_SIZE', // the response is larger than maxResponseSize
  'UND_ERR_DESTROYED', // the dispatcher is closed or destroyed: it stays so
  'UND_ERR_CLOSED',
]);

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

/** Classifies a transport error by its `code` (never by message text). Unknown → maybe sent. */
export function classifyError(error: unknown): ErrorKind {
  const code = errorCode(error);
  if (code === undefined) return 'maybe-sent';
  if (UNSENT_CODES.has(code)) return 'unsent';
  if (FATAL_CODES.has(code)) return 'fatal';
  return 'maybe-sent';
}

/** Who may retry a response with this status, given the configured retryable `statuses`. */
export function classifyStatus(
  status: number,
  headers: HeaderSource,
  statuses: ReadonlySet<number>,
): RetryScope {
  // The OpenAI and Anthropic APIs send x-should-retry: the server's word wins either way.
  const should = readHeader(headers, 'x-should-retry');
  if (should === 'true') return 'any';
  if (should === 'false') return 'never';
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
