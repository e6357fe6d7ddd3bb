/**
 * One attempt of the undici adapters, a handler on undici's current API: a
 * retried attempt as it is (`DispatchCall.send`, call.ts), attempt 1 with the
 * caller's side added (first.ts). Its response waits, buffered, while the
 * executor decides; then it is handed to the caller's handler (`forward`) or
 * released (`discard`: drained up to a bound so the connection is reused,
 * else aborted), so a pool of one connection never starves and nothing of
 * staunch's stays in undici's queue.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';
import * as undici from 'undici';
import { DRAIN_LIMIT } from '../internal/limits.js';
import { rawHasQuota, rawHeader } from './headers.js';
import {
  LEGACY_NATIVE,
  LegacyCaller,
  LegacyLink,
  NO_HEADERS,
  type RawController,
} from './legacy.js';
import { afterNextPoll, expectSend, markIfStale, type Probe } from './stale.js';

type Controller = Dispatcher.DispatchController;
type Handler = Dispatcher.DispatchHandler;

/** The controller the caller's handler gets (first.ts), which drives the attempt handed over. */
type CallerSide = Controller & { attempt: Attempt | undefined };

/** Bytes held while the executor decides; past that the socket is paused. */
const HOLD_LIMIT = 1024 * 1024;

/** Hands `error` to the caller's handler; a throw from it has nowhere left to go. */
export function deliverError(handler: Handler, controller: Controller, error: Error): void {
  try {
    handler.onResponseError?.(controller, error);
  } catch {
    // The handler's own error handler failed: undici would drop this too.
  }
}

export class Attempt implements Handler, Probe {
  /** undici's raw headers, where it gave them (undici 7). */
  rawHeaders: Buffer[] | undefined;
  /** The headers parsed; `undefined` while only raw (a {@link LegacyLink}'s), until read whole. */
  #headers: IncomingHttpHeaders | undefined = NO_HEADERS;
  status = 0;
  statusText: string | undefined;
  /** undici's raw trailers, where its controller carries them (undici 7). */
  rawTrailers: Buffer[] | undefined;
  // Where it went out (stale.ts).
  socket: Probe['socket'];
  reused = false;
  bytesRead = 0;
  /** Where it is: sent (no response yet), its response waiting, released, handed on, over. */
  protected phase: 'sent' | 'wait' | 'discard' | 'forward' | 'done' = 'sent';
  protected controller: Controller | undefined;
  /** An abort asked for before undici called `onRequestStart`. */
  #abortReason: Error | undefined;
  /** The caller's side of the logical request, for a retried attempt (attempt 1 is its own). */
  readonly #owner: Attempt | undefined;
  #resolve: ((attempt: Attempt) => void) | undefined;
  #reject: ((error: unknown) => void) | undefined;
  /** Body chunks held until the caller takes them (allocated on the first one). */
  #chunks: Buffer[] | undefined;
  #held = 0;
  #ended = false;
  #trailers: IncomingHttpHeaders | undefined;
  #error: Error | undefined;
  #pausedByUs = false;
  /** The caller's handler and controller, once the response is handed over. */
  #handler: Handler | undefined;
  #callerController: CallerSide | undefined;
  #discarded: (() => void) | undefined;
  /** The caller's handler threw and was given its error (`fail`). */
  #failed = false;

  constructor(owner?: Attempt) {
    this.#owner = owner;
  }

  /** An attempt's `onRequestStart`: the caller is told once, with that attempt's context. */
  started(context: unknown): void {
    this.#owner?.started(context);
  }

  /** A 1xx response of an attempt. */
  informational(status: number, headers: IncomingHttpHeaders, text?: string): void {
    this.#owner?.informational(status, headers, text);
  }

  get headers(): IncomingHttpHeaders {
    this.#headers ??=
      this.rawHeaders === undefined
        ? NO_HEADERS
        : (undici.util.parseHeaders(this.rawHeaders) as IncomingHttpHeaders);
    return this.#headers;
  }

  // The executor reads a success's headers raw (call.ts, `headers`): server-delay.ts's `HeaderSource`.

  get(name: string): string | undefined {
    return rawHeader(this.rawHeaders, name);
  }

  hasQuotaHeaders(): boolean {
    return rawHasQuota(this.rawHeaders);
  }

  /** Dispatches a retried attempt: its response, or its failure; `signal` aborts it until then. */
  send(
    dispatch: Dispatcher.Dispatch,
    opts: Dispatcher.DispatchOptions,
    signal: AbortSignal,
    once: boolean,
  ): Promise<Attempt> {
    return new Promise<Attempt>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
      // Until its response: the executor's deadline or abort.
      signal.addEventListener('abort', () => {
        if (this.phase === 'sent') this.abortDispatch(signal.reason as Error);
      });
      this.dispatchOn(dispatch, opts, once);
    });
  }

  /**
   * Dispatches on undici's native handler API (legacy.ts). A request that may
   * not be sent twice (`once`) goes after the next poll, never on a connection
   * whose close had already arrived (stale.ts); an abort meanwhile ends it unsent.
   */
  protected dispatchOn(
    dispatch: Dispatcher.Dispatch,
    opts: Dispatcher.DispatchOptions,
    once: boolean,
  ): void {
    if (!once) this.#dispatchNow(dispatch, opts);
    else afterNextPoll(() => this.#dispatchNow(dispatch, opts));
  }

  #dispatchNow(dispatch: Dispatcher.Dispatch, opts: Dispatcher.DispatchOptions): void {
    // Aborted while it waited for the poll: it ends here, never dispatched.
    if (this.#abortReason !== undefined) {
      this.onResponseError(undefined, this.#abortReason);
      return;
    }
    try {
      dispatch(opts, LEGACY_NATIVE ? (new LegacyLink(this) as never) : this);
    } catch (error) {
      this.onResponseError(undefined, error as Error);
    }
  }

  /** Aborts the dispatch, now or as soon as undici starts it. */
  protected abortDispatch(reason: Error): void {
    if (this.controller === undefined) this.#abortReason = reason;
    else this.controller.abort(reason);
  }

  onRequestStart(controller: Controller, context: unknown): void {
    // Called again for each hop when a redirect interceptor sits below.
    this.controller = controller;
    if (this.#abortReason !== undefined) {
      controller.abort(this.#abortReason);
      return;
    }
    this.started(context);
    // Last: the next `undici:client:sendHeaders` publication is this attempt's.
    expectSend(this);
  }

  /** A {@link LegacyLink} gives no `headers`, only raw ones (its `rawHeaders`): parsed if read whole. */
  onResponseStart(
    c: Controller,
    status: number,
    headers: IncomingHttpHeaders | undefined,
    text?: string,
  ): void {
    if (this.phase !== 'sent') return;
    this.#headers = headers;
    this.rawHeaders = (c as RawController).rawHeaders ?? undefined;
    if (status < 200) {
      this.informational(status, this.headers, text);
      return;
    }
    this.controller = c;
    this.status = status;
    this.statusText = text;
    this.phase = 'wait';
    this.responded();
  }

  /** The response has started and waits: the executor decides. */
  protected responded(): void {
    const resolve = this.#resolve!;
    this.#resolve = this.#reject = undefined;
    resolve(this);
  }

  /** Failed before the response: the executor decides. */
  protected failed(error: Error): void {
    const reject = this.#reject;
    this.#resolve = this.#reject = undefined;
    reject?.(error);
  }

  onResponseData(controller: Controller, chunk: Buffer): void {
    switch (this.phase) {
      case 'wait':
        this.#hold(chunk);
        this.#held += chunk.length;
        if (this.#held > HOLD_LIMIT && !controller.paused) {
          this.#pausedByUs = true;
          controller.pause();
        }
        return;
      case 'discard':
        this.#held += chunk.length;
        if (this.#held > DRAIN_LIMIT) this.#stopDiscard();
        return;
      case 'forward': {
        const caller = this.#callerController!;
        if (this.#chunks?.length || caller.paused) this.#hold(chunk);
        else {
          try {
            this.#handler!.onResponseData?.(caller, chunk);
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

  onResponseEnd(controller: Controller, trailers: IncomingHttpHeaders): void {
    this.#ended = true;
    this.rawTrailers = (controller as RawController).rawTrailers ?? undefined;
    this.#trailers = trailers;
    if (this.phase === 'discard') this.#finishDiscard();
    else if (this.phase === 'forward') this.flush();
  }

  onResponseError(_controller: Controller | undefined, error: Error): void {
    if (this.phase === 'sent') {
      this.phase = 'done';
      markIfStale(error, this);
      this.failed(error);
      return;
    }
    this.#error ??= error;
    if (this.phase === 'discard') this.#finishDiscard();
    else if (this.phase === 'forward') {
      // An error ends the body at once: what is still queued is dropped.
      this.#chunks = undefined;
      this.flush();
    }
  }

  /** Releases this response (see the file comment); stops once `stop` settles. */
  discard(stop: Promise<unknown>): Promise<void> {
    if (this.phase !== 'wait') return Promise.resolve();
    this.phase = 'discard';
    this.#chunks = undefined;
    if (this.#ended || this.#error !== undefined) {
      this.phase = 'done';
      return Promise.resolve();
    }
    const length = Number(this.headers['content-length']);
    if (length > DRAIN_LIMIT || this.#held > DRAIN_LIMIT) {
      this.#stopDiscard();
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      this.#discarded = resolve;
      const stopNow = (): void => this.#stopDiscard();
      stop.then(stopNow, stopNow);
      if (this.#pausedByUs) {
        this.#pausedByUs = false;
        this.controller?.resume();
      }
    });
  }

  #stopDiscard(): void {
    if (this.phase !== 'discard') return;
    this.#finishDiscard();
    this.controller?.abort(new Error('staunch: response released before a retry'));
  }

  #finishDiscard(): void {
    this.phase = 'done';
    this.#discarded?.();
  }

  /** Hands the waiting response to the caller's `handler`: its start, then what is held. */
  forward(handler: Handler, controller: CallerSide): void {
    if (this.phase !== 'wait') return;
    this.#handler = handler;
    this.#callerController = controller;
    controller.attempt = this;
    this.phase = 'forward';
    try {
      // A legacy caller takes the raw headers (legacy.ts): not parsed for it.
      const raw = handler instanceof LegacyCaller && this.rawHeaders !== undefined;
      handler.onResponseStart?.(
        controller,
        this.status,
        raw ? NO_HEADERS : this.headers,
        this.statusText,
      );
    } catch (error) {
      this.fail(error);
      return;
    }
    this.flush();
  }

  /** Delivers held chunks, then the end or the error, while the caller is not paused. */
  flush(): void {
    const handler = this.#handler;
    const controller = this.#callerController;
    if (handler === undefined || controller === undefined || this.phase !== 'forward') return;
    const chunks = this.#chunks;
    try {
      while (chunks !== undefined && chunks.length > 0) {
        if (controller.paused) {
          this.pauseSocket();
          return;
        }
        handler.onResponseData?.(controller, chunks.shift()!);
        if (this.phase !== 'forward') return;
      }
      if (this.#error !== undefined) {
        this.phase = 'done';
        deliverError(handler, controller, this.#error);
      } else if (this.#ended) {
        this.phase = 'done';
        handler.onResponseEnd?.(controller, this.#trailers ?? NO_HEADERS);
      } else if (!controller.paused && (this.#pausedByUs || this.controller?.paused)) {
        this.#pausedByUs = false;
        this.controller?.resume();
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
   * callback or from undici's parser, where a throw would be lost.
   */
  fail(error: unknown): void {
    if (this.#failed) return;
    this.#failed = true;
    this.phase = 'done';
    this.#chunks = undefined;
    const reason = error instanceof Error ? error : new Error(String(error));
    if (!this.#ended && this.#error === undefined) {
      this.#error = reason;
      this.controller?.abort(reason);
    }
    deliverError(this.#handler!, this.#callerController!, reason);
  }

  pauseSocket(): void {
    if (this.phase === 'forward' && !this.#ended) this.controller?.pause();
  }

  /** The caller aborted after the hand-over. */
  callerAbort(reason: Error): void {
    if (this.phase !== 'forward') return;
    if (this.#ended || this.#error !== undefined) {
      // undici is done with this request: the error is ours to deliver.
      this.#chunks = undefined;
      this.#error = reason;
      this.flush();
      return;
    }
    this.controller?.abort(reason);
  }
}
