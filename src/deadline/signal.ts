/**
 * `deadlineSignal`: the server's side of `deadlineHeader`. Reads the time
 * left that a caller sent, and gives an `AbortSignal` that fires when the
 * caller will no longer wait: that time has passed, the server's own `max`
 * has, the client disconnected (Node, given the response), or `signal`
 * aborted. Portable: Node's request and response are read by shape, and
 * nothing here imports `node:`.
 */
import { type Clock, startTimer, systemClock } from '../internal/clock.js';
import { parseTimeLeft, type TimeLeftFormat } from '../internal/time-left.js';
import { checkNumber, checkObject, describe, keysOf } from '../internal/validate.js';
import { checkHeaderName } from '../options.js';
import { MAX_DELAY } from '../retry/server-delay.js';

/** A header record as Node gives it (`IncomingMessage.headers`), or any plain record. */
export type HeaderRecord = Readonly<Record<string, string | readonly string[] | undefined>>;

/** A `Headers` (a Fetch `Request`'s, Hono's, Deno's), or anything with its `get`. */
export interface HeadersReader {
  get(name: string): string | null;
}

/** Node's `ServerResponse`, as far as it is read: its `close` event, whether it finished. */
export interface ResponseLike {
  readonly writableFinished: boolean;
  once(event: 'close', listener: () => void): unknown;
  removeListener(event: 'close', listener: () => void): unknown;
  /** The request it answers (Node's `res.req`). */
  readonly req?: { readonly headers: HeaderRecord } | undefined;
}

/**
 * Where the incoming headers are: a Fetch `Request` (its `signal` is
 * linked too), a `Headers`, Node's `IncomingMessage` or `ServerResponse`
 * (which also tells of a disconnect), Fastify's request, or a record.
 */
export type DeadlineSource =
  | { readonly headers: HeadersReader | HeaderRecord; readonly signal?: AbortSignal | null }
  | HeadersReader
  | HeaderRecord
  | ResponseLike;

/** Options of {@link deadlineSignal}. Durations in ms. */
export interface DeadlineSignalOptions {
  /** The header the caller's time left comes in. @default 'grpc-timeout' */
  header?: string;
  /** Its syntax: `'auto'` reads both (a unit letter says `grpc-timeout`). @default 'auto' */
  format?: TimeLeftFormat | 'auto';
  /** The server's own limit: the signal fires after this whatever the header says. @default none */
  max?: number;
  /** Also aborts the returned signal (a shutdown, an outer request's signal). @default none */
  signal?: AbortSignal;
  /** Node's `ServerResponse`: its close before it finished is a client disconnect. @default none */
  response?: ResponseLike;
  /** Time source, for tests. @default systemClock */
  clock?: Clock;
}

/** What {@link deadlineSignal} returns. */
export interface RequestDeadline {
  /** Fires once the caller gave up or may no longer wait; its reason says which. */
  readonly signal: AbortSignal;
  /** Clock time (epoch ms with the system clock) the work must end by; `undefined`: no limit. */
  readonly deadline: number | undefined;
  /** The ms left before {@link deadline}, at least 0; `Infinity` without one. For `timeout.total` of an outbound call. */
  timeLeft(): number;
  /** Clears the timer and the listeners before the signal fires (the handler is done). */
  dispose(): void;
}

const KEYS = keysOf<DeadlineSignalOptions>()([
  'header',
  'format',
  'max',
  'signal',
  'response',
  'clock',
]);

/**
 * The incoming request's deadline as an `AbortSignal`. A missing or
 * malformed header is no deadline (only `max`): it never throws for what the
 * caller sent. A time left of 0 is a signal aborted already.
 * @throws TypeError/RangeError for a bad option, naming it and the value.
 *
 * @example
 * const { signal, timeLeft } = deadlineSignal(req, { response: res, header: 'x-timeout-ms', max: 30_000 });
 * const rows = await db.query(sql, { signal });
 * await fetch(next, { staunch: { timeout: { total: timeLeft() } } });
 */
export function deadlineSignal(
  source: DeadlineSource,
  options: DeadlineSignalOptions = {},
): RequestDeadline {
  const o = checkObject('deadlineSignal options', options, KEYS) as DeadlineSignalOptions;
  const header = checkHeaderName('header', o.header ?? 'grpc-timeout').toLowerCase();
  const format = o.format ?? 'auto';
  if (format !== 'auto' && format !== 'ms' && format !== 'grpc-timeout') {
    throw new TypeError(`format must be 'auto', 'ms' or 'grpc-timeout', got ${describe(format)}`);
  }
  const max =
    o.max === undefined
      ? Number.POSITIVE_INFINITY
      : checkNumber('max', o.max, { min: 0, max: MAX_DELAY });
  const clock = o.clock ?? systemClock;
  const response = o.response ?? (isResponse(source) ? source : undefined);
  const sent = parseTimeLeft(readHeader(source, header), format);
  const left = Math.min(sent ?? Number.POSITIVE_INFINITY, max);
  const fromHeader = sent !== undefined && sent <= max;
  const now = clock.now();
  const deadline = Number.isFinite(left) ? now + left : undefined;

  const controller = new AbortController();
  const cleanups: (() => void)[] = [];
  const dispose = (): void => {
    for (const cleanup of cleanups.splice(0)) cleanup();
  };
  const abort = (reason: unknown): void => {
    dispose();
    controller.abort(reason);
  };
  const linked = [o.signal, requestSignal(source)];
  for (const outer of linked) {
    if (outer === undefined) continue;
    if (outer.aborted) abort(outer.reason);
    else {
      const onAbort = (): void => abort(outer.reason);
      outer.addEventListener('abort', onAbort, { once: true });
      cleanups.push(() => outer.removeEventListener('abort', onAbort));
    }
  }
  if (response !== undefined && !controller.signal.aborted) {
    const onClose = (): void => {
      if (response.writableFinished) dispose();
      else abort(new DOMException('the client disconnected', 'AbortError'));
    };
    response.once('close', onClose);
    cleanups.push(() => response.removeListener('close', onClose));
  }
  if (deadline !== undefined && !controller.signal.aborted) {
    const expired = (): DOMException =>
      new DOMException(
        fromHeader ? "the caller's deadline passed" : "the server's max passed",
        'TimeoutError',
      );
    if (left <= 0) abort(expired());
    else cleanups.push(startTimer(clock, left, () => abort(expired())));
  }
  return {
    signal: controller.signal,
    deadline,
    timeLeft: () =>
      deadline === undefined ? Number.POSITIVE_INFINITY : Math.max(0, deadline - clock.now()),
    dispose,
  };
}

function isResponse(source: unknown): source is ResponseLike {
  const r = source as Partial<ResponseLike>;
  return typeof r.writableFinished === 'boolean' && typeof r.once === 'function';
}

/** A Fetch `Request`'s own signal (aborted when its client goes, where the runtime does so). */
function requestSignal(source: DeadlineSource): AbortSignal | undefined {
  const signal = (source as { signal?: unknown }).signal;
  if (typeof signal !== 'object' || signal === null) return undefined;
  const s = signal as Partial<AbortSignal>;
  return typeof s.aborted === 'boolean' && typeof s.addEventListener === 'function'
    ? (signal as AbortSignal)
    : undefined;
}

/** The value of header `lower` in whatever holds the headers; the first of several. */
function readHeader(source: DeadlineSource, lower: string): string | undefined {
  if (typeof source !== 'object' || source === null) return undefined;
  if (typeof (source as HeadersReader).get === 'function') {
    return (source as HeadersReader).get(lower) ?? undefined;
  }
  if (isResponse(source)) {
    return source.req === undefined ? undefined : fromRecord(source.req.headers, lower);
  }
  const inner = (source as { headers?: unknown }).headers;
  if (typeof inner === 'object' && inner !== null) {
    if (typeof (inner as HeadersReader).get === 'function') {
      return (inner as HeadersReader).get(lower) ?? undefined;
    }
    return fromRecord(inner as HeaderRecord, lower);
  }
  return fromRecord(source as HeaderRecord, lower);
}

function fromRecord(record: HeaderRecord, lower: string): string | undefined {
  let value = record[lower];
  if (value === undefined) {
    const name = Object.keys(record).find((n) => n.toLowerCase() === lower);
    value = name === undefined ? undefined : record[name];
  }
  if (typeof value === 'string') return value;
  if (Array.isArray(value) && typeof value[0] === 'string') return value[0];
  return undefined;
}
