/**
 * One dispatch of the undici adapters as the executor sees it: the
 * logical request and its exchange in one object (`DispatchCall`), and how
 * the adapters' errors reach the caller (`surface`). Shared by `retryInterceptor`, `createAgent`
 * and staunch/undici's `createFetch`.
 */
import { randomUUID } from 'node:crypto';
import type { Dispatcher } from 'undici';
import { deadlineValue, type ResolvedDeadlineHeader } from '../deadline-header.js';
import { NetworkError, SsrfBlockedError } from '../errors.js';
import type { Exchange, LogicalRequest } from '../executor/index.js';
import { collectSecrets } from '../internal/redact.js';
import type {
  ResolvedHedgeOptions,
  ResolvedRetryOptions,
  ResolvedTimeoutOptions,
} from '../options.js';
import { describeReplay, type ReplayRequest } from '../replay.js';
import { idempotencyOf, readRequestOptions, upperMethod } from '../request-options.js';
import { errorCode } from '../retry/classify.js';
import type { HeaderSource } from '../retry/server-delay.js';
import { Attempt } from './attempt.js';
import type { UndiciRuntime } from './client.js';
import { hasHeader, headerPairs, withHeader } from './headers.js';
import { KeptBody, keepBody } from './kept-body.js';
import type { StaunchDispatchOptions } from './options.js';

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

/**
 * The logical request and its exchange in one object (one allocation on the
 * hot path), built from the dispatch options. `mark`: the attempts carry
 * the mark that makes a staunch layer further down pass them through.
 * @internal
 */
export class DispatchCall implements LogicalRequest, Exchange<Attempt> {
  readonly method: string;
  readonly origin: string;
  readonly #path: string;
  #url: string | undefined;
  readonly replayable: boolean;
  readonly retry: ResolvedRetryOptions;
  readonly timeout: ResolvedTimeoutOptions;
  /** Hedging, for a body every attempt may send at once (never a stream nor a kept one-shot body). */
  readonly hedge: ResolvedHedgeOptions | undefined;
  readonly #opts: Dispatcher.DispatchOptions;
  readonly #keyHeader: string;
  readonly resendable: (unsent: boolean) => boolean;
  /** `Attempt.send` only listens to its signal: a token does (token.ts). */
  readonly tokenSignal = true;
  /** Attempts come and go beside undici's own timers: their deadlines go on the steady list. */
  readonly steadyDeadlines = true;
  /** The header that carries each attempt's time left: none when the caller set it. */
  readonly #deadline: ResolvedDeadlineHeader | undefined;
  readonly #rawReads: boolean;

  constructor(
    client: UndiciRuntime,
    readonly dispatch: Dispatcher.Dispatch,
    opts: StaunchDispatchOptions,
    readonly signal: AbortSignal,
    mark: boolean,
    /** The caller's side of the request, which every attempt tells of its start and its 1xx. */
    readonly caller: Attempt,
  ) {
    let base: Dispatcher.DispatchOptions = opts;
    let staunch: unknown;
    if (opts.staunch !== undefined) {
      const { staunch: fields, ...rest } = opts;
      base = rest;
      staunch = fields;
    }
    const settings = readRequestOptions(client, staunch, 'staunch');
    this.method = upperMethod(base.method);
    const { header } = client.idempotency;
    let headers = base.headers;
    const { key, replayable } = idempotencyOf(
      this.method,
      settings,
      client.idempotency,
      headers,
      hasHeader,
      randomUUID,
    );
    if (key !== undefined) headers = withHeader(headers, header, key);
    const kept = keepBody(base.body, headers, client.bodyReplayLimit);
    let sent = base;
    if (mark || kept !== undefined || base !== opts || headers !== base.headers) {
      // undici's types list no async iterable body, which its dispatch takes (fetch's own).
      sent = { ...base, headers, ...(kept !== undefined && { body: kept }) } as typeof base;
      if (mark) (sent as { [HANDLED]?: true })[HANDLED] = true;
    }
    this.#opts = sent;
    this.origin = originOf(sent.origin);
    this.#path = sent.path;
    this.replayable = replayable;
    this.retry = settings.retry;
    this.timeout = settings.timeout;
    this.#keyHeader = header;
    this.resendable = resendable(sent.body);
    const deadline = settings.deadlineHeader;
    this.#deadline =
      deadline === undefined || hasHeader(headers, deadline.lower) ? undefined : deadline;
    this.hedge = this.resendable === always && kept === undefined ? settings.hedge : undefined;
    this.#rawReads = client.rawPacing;
  }

  /** Built when first read: a success reads the origin (the policy key), never the URL. */
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
    return new Attempt(this.caller).send(this.dispatch, opts, signal, !this.replayable);
  }

  status(attempt: Attempt): number {
    return attempt.status;
  }

  headers(attempt: Attempt): HeaderSource {
    // A success's headers are read from the raw ones unless a `pacing` reader of the
    // caller's takes them (it gets the parsed record, as a failure's readers do).
    const raw = this.#rawReads && attempt.rawHeaders !== undefined && attempt.status < 400;
    return raw ? attempt : attempt.headers;
  }

  discard(attempt: Attempt, stop: Promise<unknown>): Promise<void> {
    return attempt.discard(stop);
  }

  /** The caller's controller drives a handed-over attempt: the signal link is not needed. */
  handOver(_attempt: Attempt, unlink: () => void): void {
    unlink();
  }
}

/** `origin` as undici takes it (a string or a URL), without a trailing slash. */
export function originOf(origin: Dispatcher.DispatchOptions['origin']): string {
  if (origin === undefined) return '';
  if (typeof origin !== 'string') return origin.origin;
  return origin.endsWith('/') ? origin.slice(0, -1) : origin;
}

const always = (): boolean => true;

/**
 * Can the body be sent again? Strings, bytes, Blobs, FormData (encoded afresh
 * each dispatch) and a kept one-shot body (kept-body.ts): always. A Node
 * stream: only after an attempt that never connected, if nothing was read
 * from it. Other iterables: once.
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
