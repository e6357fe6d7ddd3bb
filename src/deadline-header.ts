/**
 * The `deadlineHeader` option: each attempt carries the time left before
 * staunch's deadline in a header of the caller's choice, so the server can
 * stop working when the caller will no longer wait (docs/deadlines.md).
 * Resolved once per client, or per request when a request overrides it.
 */
import { formatTimeLeft, type TimeLeftFormat } from './internal/time-left.js';
import { checkNumber, checkObject, describe, keysOf } from './internal/validate.js';
import { checkHeaderName } from './options.js';
import { MAX_DELAY } from './retry/server-delay.js';

/** The header that carries an attempt's time left, in full. */
export interface DeadlineHeaderOptions {
  /** The header's name (an RFC 9110 token), e.g. `X-Timeout-Ms` or `grpc-timeout`. */
  name: string;
  /** `'ms'`: whole milliseconds (`950`); `'grpc-timeout'`: gRPC's syntax (`950m`). @default 'ms' */
  format?: TimeLeftFormat;
  /** Taken off the time left (ms), for the response's way back. @default 0 */
  margin?: number;
}

/** `false`: none; a string: the header's name (format `ms`, margin 0). */
export type DeadlineHeader = false | string | DeadlineHeaderOptions;

/** @internal */
export interface ResolvedDeadlineHeader {
  readonly name: string;
  /** `name` in lower case, to find the caller's own. */
  readonly lower: string;
  readonly format: TimeLeftFormat;
  readonly margin: number;
}

const KEYS = keysOf<DeadlineHeaderOptions>()(['name', 'format', 'margin']);

/**
 * Resolves `deadlineHeader` (`path` names it in errors); `undefined` keeps
 * `base` (the client's, for a request), `false` is none.
 * @throws TypeError/RangeError naming the option and the value.
 */
export function resolveDeadlineHeader(
  input: unknown,
  base: ResolvedDeadlineHeader | undefined,
  path = 'deadlineHeader',
): ResolvedDeadlineHeader | undefined {
  if (input === undefined) return base;
  if (input === false) return undefined;
  if (typeof input === 'string') return resolved(checkHeaderName(path, input), 'ms', 0);
  const o = checkObject(path, input, KEYS);
  const name = checkHeaderName(`${path}.name`, o.name);
  const format = o.format ?? 'ms';
  if (format !== 'ms' && format !== 'grpc-timeout') {
    throw new TypeError(`${path}.format must be 'ms' or 'grpc-timeout', got ${describe(format)}`);
  }
  const margin =
    o.margin === undefined
      ? 0
      : checkNumber(`${path}.margin`, o.margin, { min: 0, max: MAX_DELAY });
  return resolved(name, format, margin);
}

function resolved(name: string, format: TimeLeftFormat, margin: number): ResolvedDeadlineHeader {
  return Object.freeze({ name, lower: name.toLowerCase(), format, margin });
}

/**
 * The header's value for an attempt that may wait `limit` ms (the least of
 * `timeout.attempt` and the total deadline left, at send time): `undefined`
 * when it has no finite deadline. The margin may bring it to 0, sent as 0.
 */
export function deadlineValue(header: ResolvedDeadlineHeader, limit: number): string | undefined {
  if (!Number.isFinite(limit)) return undefined;
  return formatTimeLeft(limit - header.margin, header.format);
}
