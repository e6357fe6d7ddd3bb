/**
 * One dispatch of the undici adapters as the executor sees it: the
 * logical request and its exchange in one object (`DispatchCall`), built
 * from the dispatch options by `prepare`, and how the adapters' errors
 * reach the caller (`surface`). Shared by `retryInterceptor`, `createAgent`
 * and staunch/undici's `createFetch`.
 */
import { randomUUID } from 'node:crypto';
import type { Dispatcher } from 'undici';
import {
  type DeadlineHeader,
  deadlineValue,
  type ResolvedDeadlineHeader,
} from '../deadline-header.js';
import { NetworkError, SsrfBlockedError } from '../errors.js';
import type { Exchange, LogicalRequest } from '../executor/index.js';
import { collectSecrets } from '../internal/redact.js';
import type {
  HedgeOptions,
  ResolvedHedgeOptions,
  ResolvedRetryOptions,
  ResolvedTimeoutOptions,
  RetryOptions,
  TimeoutOptions,
} from '../options.js';
import { describeReplay, type ReplayRequest } from '../replay.js';
import {
  idempotencyOf,
  type RequestSettings,
  readRequestOptions,
  upperMethod,
} from '../request-options.js';
import { errorCode } from '../retry/classify.js';
import type { HeaderSource } from '../retry/server-delay.js';
import { Attempt } from './attempt.js';
import type { UndiciRuntime } from './client.js';
import { hasHeader, headerPairs, withHeader } from './headers.js';
import { KeptBody, keepBody } from './kept-body.js';

/** Per-request options, on the dispatch options as `staunch: { … }`. */
export interface StaunchDispatchFields {
  /** Overrides the interceptor's retry options for this request. */
  retry?: RetryOptions | number | boolean;
  /** Overrides the interceptor's deadlines for this request. */
  timeout?: TimeoutOptions | number | false;
  /** Sent in the idempotency header; makes any method replayable. */
  idempotencyKey?: string;
  /** Overrides the interceptor's `deadlineHeader` for this request (`false`: none). */
  deadlineHeader?: DeadlineHeader;
  /** Overrides the interceptor's hedging for this request; `false`: none (docs/hedging.md). */
  hedge?: false | HedgeOptions;
}

/** Dispatch (or `undici.request`) options with staunch's per-request fields. */
export type StaunchDispatchOptions<T extends object = Dispatcher.DispatchOptions> = T & {
  staunch?: StaunchDispatchFields;
};

/**
 * Marks the options of an attempt: a second staunch interceptor further down
 * the chain passes them through, so there are never two retry layers.
 */
const HANDLED: unique symbol = Symbol.for('staunch.undici.handled') as never;

/** Does `opts` ask to go past staunch untouched (an attempt of an outer staunch layer, an upgrade)? */
export function passesThrough(opts: Dispatcher.DispatchOptions): boolean {
  return (
    (opts as { [HANDLED]?: true })[HANDLED] === true || !!opts.upgrade || opts.method === 'CONNECT'
  );
}

/** The logical request and its exchange in one object: one allocation on the hot path. */
export class DispatchCall implements LogicalRequest, Exchange<Attempt> {
  readonly method: string;
  readonly origin: string;
  readonly #path: string;
  #url: string | undefined;
  readonly replayable: boolean;
  readonly signal: AbortSignal;
  readonly retry: ResolvedRetryOptions;
  readonly timeout: ResolvedTimeoutOptions;
  /** Hedging, for a body every attempt may send at once (never a stream nor a kept one-shot body). */
  readonly hedge: ResolvedHedgeOptions | undefined;
  readonly #dispatch: Dispatcher.Dispatch;
  readonly #opts: Dispatcher.DispatchOptions;
  readonly #keyHeader: string;
  readonly resendable: (unsent: boolean) => boolean;
  /** `Attempt.send` only listens to its signal: a token does (token.ts). */
  readonly tokenSignal = true;
  /** Attempts come and go beside undici's own timers: their deadlines go on the steady list. */
  readonly steadyDeadlines = true;
  /** The caller's side of the request, which every attempt tells of its start and its 1xx. */
  readonly #caller: Attempt;
  /** The header that carries each attempt's time left: none when the caller set it. */
  readonly #deadline: ResolvedDeadlineHeader | undefined;
  readonly #rawReads: boolean;

  // Positional, not an object of fields: one allocation fewer on every request.
  constructor(
    dispatch: Dispatcher.Dispatch,
    opts: Dispatcher.DispatchOptions,
    caller: Attempt,
    method: string,
    replayable: boolean,
    signal: AbortSignal,
    settings: RequestSettings,
    keyHeader: string,
    rawReads: boolean,
  ) {
    this.#dispatch = dispatch;
    this.#opts = opts;
    this.#caller = caller;
    this.method = method;
    this.origin = originOf(opts.origin);
    this.#path = opts.path;
    this.replayable = replayable;
    this.signal = signal;
    this.retry = settings.retry;
    this.timeout = settings.timeout;
    this.#keyHeader = keyHeader;
    this.resendable = resendable(opts.body);
    const deadline = settings.deadlineHeader;
    this.#deadline =
      deadline === undefined || hasHeader(opts.headers, deadline.lower) ? undefined : deadline;
    const fixed = this.resendable === always && !(opts.body instanceof KeptBody);
    this.hedge = fixed ? settings.hedge : undefined;
    this.#rawReads = rawReads;
  }

  /**
   * The URL, built when first read: a success's path reads the origin
   * (the policy key) and never the whole URL.
   */
  get url(): string {
    this.#url ??= `${this.origin}${this.#path}`;
    return this.#url;
  }

  /** The options an attempt that may take `limit` ms is dispatched with (its time-left header). */
  optionsFor(limit: number): Dispatcher.DispatchOptions {
    const opts = this.#opts;
    const deadline = this.#deadline;
    const left = deadline === undefined ? undefined : deadlineValue(deadline, limit);
    if (left === undefined) return opts;
    return { ...opts, headers: withHeader(opts.headers, deadline!.name, left) };
  }

  secrets(): readonly string[] {
    return collectSecrets(this.url, headerPairs(this.#opts.headers));
  }

  keyed(): boolean {
    return hasHeader(this.#opts.headers, this.#keyHeader.toLowerCase());
  }

  replay(): ReplayRequest | undefined {
    return describeReplay(
      this.method,
      this.url,
      headerPairs(this.#opts.headers),
      this.#opts.body ?? undefined,
      this.#keyHeader,
    );
  }

  send(signal: AbortSignal, _attempt: number, limit: number): Promise<Attempt> {
    const opts = this.optionsFor(limit);
    return new Attempt(this.#caller).send(this.#dispatch, opts, signal, !this.replayable);
  }

  status(attempt: Attempt): number {
    return attempt.status;
  }

  headers(attempt: Attempt): HeaderSource {
    // A success's headers are read from the raw ones unless a `pacing` reader of the
    // caller's takes them (it gets the parsed record, as a failure's readers do).
    return this.#rawReads && attempt.unparsed && attempt.status < 400 ? attempt : attempt.headers;
  }

  discard(attempt: Attempt, stop: Promise<unknown>): Promise<void> {
    return attempt.discard(stop);
  }

  /** The caller's controller drives a handed-over attempt: the signal link is not needed. */
  handOver(_attempt: Attempt, unlink: () => void): void {
    unlink();
  }
}

/** Builds the logical request (and its exchange) from the dispatch options. @internal */
export function prepare(
  client: UndiciRuntime,
  dispatch: Dispatcher.Dispatch,
  opts: StaunchDispatchOptions,
  signal: AbortSignal,
  mark: boolean,
  caller: Attempt,
): DispatchCall {
  let base: Dispatcher.DispatchOptions = opts;
  let staunch: unknown;
  if (opts.staunch !== undefined) {
    const { staunch: fields, ...rest } = opts;
    base = rest;
    staunch = fields;
  }
  const settings = readRequestOptions(client, staunch, 'staunch');
  const method = upperMethod(base.method);
  const { header } = client.idempotency;
  let headers = base.headers;
  const { key, replayable } = idempotencyOf(
    method,
    settings,
    client.idempotency,
    headers,
    hasHeader,
    randomUUID,
  );
  if (key !== undefined) headers = withHeader(headers, header, key);
  const kept = keepBody(base.body, headers, client.bodyReplayLimit);
  let attemptOpts: Dispatcher.DispatchOptions = base;
  if (mark || kept !== undefined || base !== opts || headers !== base.headers) {
    // undici's types list no async iterable body, which its dispatch takes (fetch's own).
    attemptOpts = {
      ...base,
      headers,
      ...(kept !== undefined && { body: kept }),
    } as Dispatcher.DispatchOptions;
    if (mark) (attemptOpts as { [HANDLED]?: true })[HANDLED] = true;
  }
  return new DispatchCall(
    dispatch,
    attemptOpts,
    caller,
    method,
    replayable,
    signal,
    settings,
    header,
    client.rawPacing,
  );
}

/** `origin` as undici takes it (a string or a URL), without a trailing slash. */
export function originOf(origin: Dispatcher.DispatchOptions['origin']): string {
  if (origin === undefined) return '';
  if (typeof origin !== 'string') return origin.origin;
  return origin.endsWith('/') ? origin.slice(0, -1) : origin;
}

const always = (): boolean => true;

/**
 * Can the body be sent again? Strings, bytes, Blobs and FormData (undici
 * encodes them afresh for each dispatch), and a one-shot body kept as it
 * is sent (kept-body.ts): always. A Node stream: only after
 * an attempt that provably never connected, if nothing was read from it.
 * Other iterables: once.
 */
function resendable(body: unknown): (unsent: boolean) => boolean {
  if (
    body === undefined ||
    body === null ||
    body instanceof KeptBody ||
    typeof body === 'string' ||
    ArrayBuffer.isView(body) ||
    body instanceof ArrayBuffer ||
    (typeof Blob !== 'undefined' && body instanceof Blob) ||
    (typeof FormData !== 'undefined' && body instanceof FormData) ||
    Object.prototype.toString.call(body) === '[object FormData]'
  ) {
    return always;
  }
  const stream = body as { readableDidRead?: boolean; destroyed?: boolean; pipe?: unknown };
  if (typeof stream.pipe === 'function') {
    return (unsent) => unsent && stream.readableDidRead === false && stream.destroyed === false;
  }
  return () => false;
}

/**
 * The error the caller's handler gets: the SSRF guard's own error, or the
 * `RequestRetryError` of a retry layer below, rather than the `NetworkError`
 * around it; any other error as the executor threw it.
 */
export function surface(error: unknown): Error {
  if (error instanceof NetworkError) {
    if (error.cause instanceof SsrfBlockedError) return error.cause;
    // A lower retry layer (undici's interceptors.retry()) gave up on a status: its own error.
    if (errorCode(error.cause) === 'UND_ERR_REQ_RETRY') return error.cause as Error;
  }
  // The caller's own abort reason goes back as it is, whatever it is.
  return error as Error;
}
