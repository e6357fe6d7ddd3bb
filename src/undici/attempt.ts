/**
 * One attempt of the retry interceptor: an undici dispatch handler whose
 * response waits, buffered, while the executor decides. Then it is either
 * handed to the caller's handler (`forward`) or released (`discard`: drained
 * up to a bound so the connection can be reused, else aborted, which makes
 * undici destroy the socket), so that a pool of one connection never starves.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';
import * as undici from 'undici';
import { DRAIN_LIMIT } from '../internal/limits.js';
// On a parsed record it makes the one pass over its names itself.
import { hasQuotaHeaders as hasQuotaRecord } from '../retry/server-delay.js';
import { expectSend, markIfStale, type Probe } from './stale.js';
import type { AbortToken } from './token.js';

type Controller = Dispatcher.DispatchController;
type Handler = Dispatcher.DispatchHandler;

/** Bytes of a failed response read so that its connection can be reused; past that it is aborted. */
/** Bytes held while the executor decides; past that the socket is paused. */
const HOLD_LIMIT = 1024 * 1024;

/**
 * What every controller here keeps (aborted, paused, the reason); what an
 * abort, a pause and a resume do is the subclass's.
 */
abstract class ControllerState implements Controller {
  #aborted = false;
  #paused = false;
  #reason: Error | null = null;

  get aborted(): boolean {
    return this.#aborted;
  }

  get paused(): boolean {
    return this.#paused;
  }

  get reason(): Error | null {
    return this.#reason;
  }

  abort(reason: Error): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason ?? new Error('The request was aborted');
    this.aborting(this.#reason);
  }

  pause(): void {
    this.#paused = true;
    this.pausing();
  }

  resume(): void {
    if (!this.#paused) return;
    this.#paused = false;
    this.resuming();
  }

  protected abstract aborting(reason: Error): void;
  protected abstract pausing(): void;
  protected abstract resuming(): void;
}

/**
 * The controller the caller's handler gets: before the hand-over it aborts
 * the whole logical request; after it, it drives the attempt handed over.
 */
export class CallerController extends ControllerState {
  readonly #logical: AbortToken;
  /** The attempt handed over, once there is one. */
  attempt: Attempt | undefined;

  constructor(logical: AbortToken) {
    super();
    this.#logical = logical;
  }

  /** The response's raw headers as undici read them, for a caller on the legacy handler API. */
  get rawHeaders(): Buffer[] | null {
    return this.attempt?.rawHeaders ?? null;
  }

  /** The same for the trailers, once the body has ended. */
  get rawTrailers(): Buffer[] | null {
    return this.attempt?.rawTrailers ?? null;
  }

  protected aborting(reason: Error): void {
    if (this.attempt !== undefined) this.attempt.callerAbort(reason);
    else this.#logical.abort(reason);
  }

  protected pausing(): void {
    this.attempt?.pauseSocket();
  }

  protected resuming(): void {
    this.attempt?.flush();
  }
}

type Mode = 'wait' | 'discard' | 'forward' | 'done';

/** Hands `error` to the caller's handler; a throw from it has nowhere left to go. */
export function deliverError(handler: Handler, controller: Controller, error: Error): void {
  try {
    handler.onResponseError?.(controller, error);
  } catch {
    // The handler's own error handler failed: undici would drop this too.
  }
}

const NO_HEADERS: IncomingHttpHeaders = Object.freeze({});

/** undici's own parser of raw response headers into a record. */
export const parseHeaders = undici.util.parseHeaders as (raw: Buffer[]) => IncomingHttpHeaders;

/**
 * Whether undici's own dispatchers speak the legacy handler API (undici 7:
 * its `Dispatcher.dispatch` wraps a new-API handler in an `UnwrapHandler`,
 * which parses the response headers for it). undici 8 speaks the new API
 * and exports `Dispatcher1Wrapper` for legacy dispatchers.
 */
export const LEGACY_CORE: boolean = !('Dispatcher1Wrapper' in undici);

/**
 * One response header (`name` in lower case) of undici's raw headers,
 * without parsing them all. Repeated headers are joined with `, `, as
 * `readHeader` (server-delay.ts) does for a record.
 */
export function rawHeader(raw: readonly Buffer[], name: string): string | undefined {
  let found: string | undefined;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const key = raw[i]!;
    if (key.length !== name.length || key.toString('latin1').toLowerCase() !== name) continue;
    const v = raw[i + 1] as Buffer | Buffer[] | string;
    const value =
      typeof v === 'string'
        ? v
        : Array.isArray(v)
          ? v.map((x) => x.toString('latin1')).join(', ')
          : v.toString('latin1');
    found = found === undefined ? value : `${found}, ${value}`;
  }
  return found;
}

/**
 * Whether undici's raw headers carry one of the quota headers the pacing
 * readers look for on a success (`hasQuotaHeaders` in server-delay.ts): one
 * pass over the names, only names of those lengths compared.
 */
export function hasQuotaRaw(raw: readonly Buffer[]): boolean {
  for (let i = 0; i < raw.length; i += 2) {
    const n = raw[i]!.length;
    if (n !== 9 && n !== 19 && n !== 21) continue;
    const name = raw[i]!.toString('latin1').toLowerCase();
    if (name === 'ratelimit' || name === 'ratelimit-remaining' || name === 'x-ratelimit-remaining')
      return true;
  }
  return false;
}

/**
 * What every attempt of the undici adapters is before its response is
 * handed on: the probe of where it went (stale.ts) and the response's head,
 * its headers parsed only if someone reads them whole.
 */
export abstract class AttemptHead implements Probe {
  status = 0;
  statusText: string | undefined;
  /** undici's raw headers (its `UnwrapHandler` controller carries them), when given. */
  rawHeaders: Buffer[] | undefined;
  /** Parsed on first use when undici handed over only the raw headers. */
  protected parsed: IncomingHttpHeaders | undefined;
  // Where it went out (stale.ts, `Probe`): kept on the attempt itself, one object fewer.
  socket: Probe['socket'];
  reused = false;
  bytesRead = 0;

  get headers(): IncomingHttpHeaders {
    this.parsed ??= this.rawHeaders === undefined ? NO_HEADERS : parseHeaders(this.rawHeaders);
    return this.parsed;
  }

  /**
   * One response header (`name` in lower case), read from the raw headers
   * when there are any, without parsing them all: what the executor's own
   * pacing readers need of a success (src/retry/server-delay.ts). Repeated
   * headers are joined with `, `, as `readHeader` does for a record.
   */
  get(name: string): string | undefined {
    const raw = this.rawHeaders;
    if (raw === undefined || this.parsed !== undefined) {
      const value = this.headers[name];
      return Array.isArray(value) ? value.join(', ') : value;
    }
    return rawHeader(raw, name);
  }

  /**
   * Whether the response carries one of the quota headers the pacing readers
   * look for on a success (`hasQuotaHeaders` in server-delay.ts): one pass
   * over the raw names, only names of those lengths compared.
   */
  hasQuotaHeaders(): boolean {
    const raw = this.rawHeaders;
    if (raw === undefined || this.parsed !== undefined) return hasQuotaRecord(this.headers);
    return hasQuotaRaw(raw);
  }
}

export class Attempt extends AttemptHead implements Handler {
  rawTrailers: Buffer[] | undefined;
  #controller: Controller | undefined;
  #started = false;
  #resolve: ((attempt: Attempt) => void) | undefined;
  #reject: ((error: unknown) => void) | undefined;
  /** An abort asked for before undici called `onRequestStart`. */
  #abortReason: unknown;
  #mode: Mode = 'wait';
  /** Body chunks held until the caller takes them (allocated on the first one). */
  #chunks: Buffer[] | undefined;
  #held = 0;
  #ended = false;
  #trailers: IncomingHttpHeaders | undefined;
  #error: Error | undefined;
  #pausedByUs = false;
  /** The caller's handler and controller, once the response is handed over. */
  #handler: Handler | undefined;
  #callerController: CallerController | undefined;
  #drained = 0;
  #discarded: (() => void) | undefined;
  /** The caller's handler threw and was given its error (`fail`). */
  #failed = false;

  /** Dispatches one attempt; resolves at its response headers, rejects on a failure before them. */
  static send(
    dispatch: Dispatcher.Dispatch,
    opts: Dispatcher.DispatchOptions,
    signal: AbortSignal,
  ): Promise<Attempt> {
    return new Promise<Attempt>((resolve, reject) =>
      Attempt.sendWith(dispatch, opts, signal, resolve, reject),
    );
  }

  /**
   * {@link send} with callbacks: `ok` is called from undici's own
   * `onResponseStart`, so that a response handed back at once reaches the
   * caller's handler before its body does; `fail` on a failure before the
   * response (synchronously when `dispatch` throws).
   */
  static sendWith(
    dispatch: Dispatcher.Dispatch,
    opts: Dispatcher.DispatchOptions,
    signal: AbortSignal,
    ok: (attempt: Attempt) => void,
    fail: (error: unknown) => void,
    core = false,
  ): void {
    const attempt = new Attempt();
    attempt.#resolve = ok;
    attempt.#reject = fail;
    signal.addEventListener('abort', () => attempt.#abort(signal.reason), { once: true });
    try {
      dispatch(opts, core ? (new CoreHandler(attempt) as unknown as Handler) : attempt);
    } catch (error) {
      attempt.onResponseError(undefined, error as Error);
    }
  }

  /**
   * An attempt for a response that attempt 1's own handler (first.ts)
   * began and does not hand on itself (a status of 400 or more, for the
   * executor to decide on): from its headers on the response is this
   * attempt's, through the legacy handler returned, and `ok` is called with
   * the attempt before this returns.
   */
  static adopt(
    abort: (reason?: Error) => void,
    statusCode: number,
    rawHeaders: Buffer[],
    resume: () => void,
    statusMessage: string | undefined,
    ok: (attempt: Attempt) => void,
  ): CoreHandler {
    const attempt = new Attempt();
    attempt.#resolve = ok;
    const core = new CoreHandler(attempt);
    core.connected(abort);
    core.onHeaders(statusCode, rawHeaders, resume, statusMessage);
    return core;
  }

  /**
   * {@link adopt} on the new handler API: the attempt takes over at the
   * response's start, through undici's `controller`; it is handed to `ok`
   * before this returns, and the caller feeds it the rest of the response.
   */
  static adoptStarted(
    controller: Controller,
    statusCode: number,
    headers: IncomingHttpHeaders | undefined,
    statusMessage: string | undefined,
    ok: (attempt: Attempt) => void,
  ): Attempt {
    const attempt = new Attempt();
    attempt.#resolve = ok;
    attempt.onResponseStart(controller, statusCode, headers, statusMessage);
    return attempt;
  }

  /** The executor gave up on this attempt before its response (deadline, caller's abort). */
  #abort(reason: unknown): void {
    if (this.#mode === 'forward' || this.#mode === 'done') return;
    if (this.#controller === undefined) this.#abortReason = reason;
    else this.#controller.abort(reason as Error);
  }

  onRequestStart(controller: Controller): void {
    this.#controller = controller;
    if (this.#abortReason !== undefined) {
      controller.abort(this.#abortReason as Error);
      return;
    }
    expectSend(this);
  }

  onResponseStart(
    controller: Controller,
    statusCode: number,
    headers: IncomingHttpHeaders | undefined,
    statusMessage?: string,
  ): void {
    // 1xx informational responses are not the response.
    if (statusCode < 200 || this.#started) return;
    this.#controller = controller;
    this.#started = true;
    this.status = statusCode;
    this.parsed = headers;
    this.statusText = statusMessage;
    this.rawHeaders = (controller as { rawHeaders?: Buffer[] | null }).rawHeaders ?? undefined;
    const resolve = this.#resolve!;
    this.#resolve = this.#reject = undefined;
    resolve(this);
  }

  onResponseData(controller: Controller, chunk: Buffer): void {
    switch (this.#mode) {
      case 'wait':
        this.#hold(chunk);
        this.#held += chunk.length;
        if (this.#held > HOLD_LIMIT && !controller.paused) {
          this.#pausedByUs = true;
          controller.pause();
        }
        return;
      case 'discard':
        this.#drained += chunk.length;
        if (this.#drained > DRAIN_LIMIT) this.#stopDiscard();
        return;
      case 'forward': {
        const handler = this.#handler!;
        const callerController = this.#callerController!;
        if (this.#chunks?.length || callerController.paused) this.#hold(chunk);
        else {
          try {
            handler.onResponseData?.(callerController, chunk);
          } catch (error) {
            this.fail(error);
          }
        }
        return;
      }
      default:
    }
  }

  #hold(chunk: Buffer): void {
    if (this.#chunks === undefined) this.#chunks = [chunk];
    else this.#chunks.push(chunk);
  }

  onResponseEnd(controller: Controller, trailers: IncomingHttpHeaders | undefined): void {
    this.#ended = true;
    this.rawTrailers = (controller as { rawTrailers?: Buffer[] | null }).rawTrailers ?? undefined;
    this.#trailers = trailers;
    if (this.#mode === 'discard') this.#finishDiscard();
    else if (this.#mode === 'forward') this.flush();
  }

  onResponseError(_controller: Controller | undefined, error: Error): void {
    if (!this.#started) {
      markIfStale(error, this);
      const reject = this.#reject;
      this.#resolve = this.#reject = undefined;
      this.#mode = 'done';
      reject?.(error);
      return;
    }
    this.#error ??= error;
    if (this.#mode === 'discard') this.#finishDiscard();
    else if (this.#mode === 'forward') {
      // An error ends the body at once: what is still queued is dropped.
      this.#chunks = undefined;
      this.flush();
    }
  }

  /** Releases this response (see the file comment); stops once `stop` settles. */
  discard(stop: Promise<unknown>): Promise<void> {
    if (this.#mode !== 'wait') return Promise.resolve();
    this.#mode = 'discard';
    this.#drained = this.#held;
    this.#chunks = undefined;
    if (this.#ended || this.#error !== undefined) {
      this.#mode = 'done';
      return Promise.resolve();
    }
    const length = Number(this.headers['content-length']);
    if (length > DRAIN_LIMIT || this.#drained > DRAIN_LIMIT) {
      this.#stopDiscard();
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      this.#discarded = resolve;
      const stopNow = (): void => this.#stopDiscard();
      stop.then(stopNow, stopNow);
      if (this.#pausedByUs) {
        this.#pausedByUs = false;
        this.#controller?.resume();
      }
    });
  }

  #stopDiscard(): void {
    if (this.#mode !== 'discard') return;
    this.#finishDiscard();
    this.#controller?.abort(new Error('staunch: response released before a retry'));
  }

  #finishDiscard(): void {
    this.#mode = 'done';
    const done = this.#discarded;
    this.#discarded = undefined;
    done?.();
  }

  /** Hands the response to the caller; `flush` then delivers what is held. */
  forward(handler: Handler, controller: CallerController): void {
    this.#handler = handler;
    this.#callerController = controller;
    this.#mode = 'forward';
  }

  /** Delivers held chunks, then the end or the error, while the caller is not paused. */
  flush(): void {
    const handler = this.#handler;
    const controller = this.#callerController;
    if (handler === undefined || controller === undefined || this.#mode !== 'forward') return;
    const chunks = this.#chunks;
    try {
      while (chunks !== undefined && chunks.length > 0) {
        if (controller.paused) {
          this.pauseSocket();
          return;
        }
        handler.onResponseData?.(controller, chunks.shift()!);
        if (this.#mode !== 'forward') return;
      }
      this.#held = 0;
      if (this.#error !== undefined) {
        this.#mode = 'done';
        deliverError(handler, controller, this.#error);
      } else if (this.#ended) {
        this.#mode = 'done';
        handler.onResponseEnd?.(controller, this.#trailers ?? NO_HEADERS);
      } else if (!controller.paused && (this.#pausedByUs || this.#controller?.paused)) {
        this.#pausedByUs = false;
        this.#controller?.resume();
      }
    } catch (error) {
      this.fail(error);
    }
  }

  /**
   * The caller's handler threw while it was handed this response (undici's
   * own `interceptors.retry()` throws in `onResponseEnd` by design). A plain
   * undici dispatcher delivers such an error to the handler's
   * `onResponseError`, so this does too, once, and releases the socket if
   * the response is not over. Never rethrown: the call came from a promise
   * callback or from undici's parser, where a throw would be lost or become
   * an unhandled rejection.
   */
  fail(error: unknown): void {
    const handler = this.#handler;
    const controller = this.#callerController;
    if (handler === undefined || controller === undefined || this.#failed) return;
    this.#failed = true;
    this.#mode = 'done';
    this.#chunks = undefined;
    const reason = error instanceof Error ? error : new Error(String(error));
    if (!this.#ended && this.#error === undefined) {
      this.#error = reason;
      this.#controller?.abort(reason);
    }
    deliverError(handler, controller, reason);
  }

  pauseSocket(): void {
    if (this.#mode === 'forward' && !this.#ended) this.#controller?.pause();
  }

  /** The caller aborted after the hand-over. */
  callerAbort(reason: Error): void {
    if (this.#mode !== 'forward') return;
    if (this.#ended || this.#error !== undefined) {
      // undici is done with this request: the error is ours to deliver.
      this.#chunks = undefined;
      this.#error = reason;
      this.flush();
      return;
    }
    this.#controller?.abort(reason);
  }
}

/**
 * An attempt as undici 7's own dispatchers call it (the legacy handler
 * API), and the controller the attempt drives it through: what undici's
 * `UnwrapHandler` and `UnwrapController` would be, in one object, except that
 * the response headers are handed on raw and parsed only if someone reads
 * them ({@link Attempt.headers}): a success that is handed to a legacy caller
 * (`undici.request`) is parsed once, by that caller, instead of twice.
 */
export class CoreHandler extends ControllerState {
  readonly #attempt: Attempt;
  #abort: ((reason?: Error) => void) | undefined;
  #resume: (() => void) | undefined;
  rawHeaders: Buffer[] | null = null;
  rawTrailers: Buffer[] | null = null;

  constructor(attempt: Attempt) {
    super();
    this.#attempt = attempt;
  }

  protected aborting(reason: Error): void {
    this.#abort?.(reason);
  }

  protected pausing(): void {}

  protected resuming(): void {
    this.#resume?.();
  }

  onConnect(abort: (reason?: Error) => void): void {
    this.#abort = abort;
    this.#attempt.onRequestStart(this);
  }

  /** The request went out through someone else's handler, which handed over `abort` ({@link Attempt.adopt}). */
  connected(abort: (reason?: Error) => void): void {
    this.#abort = abort;
  }

  onHeaders(
    statusCode: number,
    rawHeaders: Buffer[],
    resume: () => void,
    statusMessage?: string,
  ): boolean {
    this.#resume = resume;
    this.rawHeaders = rawHeaders;
    this.#attempt.onResponseStart(this, statusCode, undefined, statusMessage);
    return !this.paused;
  }

  onData(chunk: Buffer): boolean {
    this.#attempt.onResponseData(this, chunk);
    return !this.paused;
  }

  onComplete(rawTrailers: Buffer[] | null): void {
    this.rawTrailers = rawTrailers;
    const trailers =
      rawTrailers === null || rawTrailers.length === 0 ? NO_HEADERS : parseHeaders(rawTrailers);
    this.#attempt.onResponseEnd(this, trailers);
  }

  onError(error: Error): void {
    this.#attempt.onResponseError(this, error);
  }
}
