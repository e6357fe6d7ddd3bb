/**
 * Attempt 1 of `createAgent` on undici 7, for a caller on the legacy handler
 * API (`undici.request`, `stream`, `pipeline`, undici's `fetch`): one handler
 * between undici's core and the caller's, which hands a response below 400
 * straight through (the caller gets undici's own `resume`, raw headers,
 * chunks and trailers, as from a bare `Agent`) once the executor has been
 * told of it. Nothing is held, nothing wrapped, no promise in between.
 *
 * Anything else leaves this path for the executor's retry loop, which then
 * goes on exactly as if it had sent attempt 1 itself: a failure before the
 * response, the attempt's deadline and the caller's abort (each settled at
 * once, the dispatch aborted), and a status of 400 or more, whose response
 * an `Attempt` adopts (attempt.ts) to be discarded or handed over.
 */
import type { Dispatcher } from 'undici';
import type { FirstSink, FirstTicket, Outcome } from '../executor.js';
import { noop } from '../internal/clock.js';
import { type Deadline, startDeadline } from '../internal/deadlines.js';
import { AbortToken } from '../internal/token.js';
import { Attempt, AttemptHead, CallerController, type CoreHandler } from './attempt.js';
import type { UndiciRuntime } from './client.js';
import { prepare, surface } from './interceptor.js';
import { LegacyCaller, type LegacyHandler } from './legacy.js';
import { expectSend, markIfStale } from './stale.js';

/**
 * Runs one logical request of `createAgent` for a legacy `caller` over
 * `dispatch` (its own undici 7 `Agent`'s), attempt 1 on the path above.
 * @internal
 */
export function runFirst(
  client: UndiciRuntime,
  dispatch: Dispatcher.Dispatch,
  opts: Dispatcher.DispatchOptions,
  caller: LegacyHandler,
): void {
  const logical = new AbortToken();
  const first = new FirstAttempt(client, caller, logical);
  let call: ReturnType<typeof prepare>;
  try {
    // As any dispatcher's caller, it learns how to abort first.
    caller.onConnect?.(first.callerAbort, {});
    call = prepare(client, dispatch, opts, logical.signal, false);
  } catch (error) {
    first.reject(error);
    return;
  }
  // Retries, if any, speak undici 7's legacy API too (attempt.ts, `CoreHandler`).
  call.core = true;
  const ticket = client.executor.first(call, call, first);
  if (ticket !== undefined) first.send(ticket, dispatch, call.options);
}

/** Where attempt 1 is. */
enum State {
  /** Sent, before its response. */
  Waiting,
  /** A success, handed straight to the caller's handler. */
  Forwarding,
  /** The executor has the outcome; a response is the adopted attempt's (`core`). */
  Handed,
}

/** The raw headers stand for the parsed ones for a legacy caller (interceptor.ts). */
const RAW_ONLY = Object.freeze({});

export class FirstAttempt extends AttemptHead implements FirstSink<Attempt> {
  readonly #client: UndiciRuntime;
  readonly #caller: LegacyHandler;
  readonly #logical: AbortToken;
  #ticket: FirstTicket | undefined;
  #state = State.Waiting;
  /** undici's abort of this dispatch, from `onConnect`. */
  #abort: ((reason?: Error) => void) | undefined;
  /** An abort asked for before undici called `onConnect`. */
  #abortReason: Error | undefined;
  #deadline: Deadline | undefined;
  /** The adopted attempt's handler, once a response of 400 or more is the executor's. */
  #core: CoreHandler | undefined;
  /** The caller's controller once the executor runs the request (a retry's response, an error). */
  #controller: CallerController | undefined;
  /** What the caller calls to abort (given to its `onConnect`). */
  readonly callerAbort = (reason?: Error): void => this.#callerAbort(reason);

  constructor(client: UndiciRuntime, caller: LegacyHandler, logical: AbortToken) {
    super();
    this.#client = client;
    this.#caller = caller;
    this.#logical = logical;
  }

  /** Sends attempt 1 as `ticket` allows (`Executor.first`). */
  send(ticket: FirstTicket, dispatch: Dispatcher.Dispatch, opts: Dispatcher.DispatchOptions): void {
    this.#ticket = ticket;
    const { limit } = ticket;
    if (Number.isFinite(limit)) {
      this.#deadline = startDeadline(this.#client.executor.clock, limit, () => this.#expire());
    }
    try {
      dispatch(opts, this as unknown as Dispatcher.DispatchHandler);
    } catch (error) {
      this.onError(error as Error);
    }
  }

  // undici 7's legacy handler API.

  onConnect(abort: (reason?: Error) => void): void {
    if (this.#state !== State.Waiting || this.#abortReason !== undefined) {
      abort(this.#abortReason);
      return;
    }
    this.#abort = abort;
    expectSend(this);
  }

  onHeaders(
    statusCode: number,
    rawHeaders: Buffer[],
    resume: () => void,
    statusMessage?: string,
  ): boolean | undefined {
    if (this.#state !== State.Waiting) return false;
    // 1xx informational responses are not the response.
    if (statusCode < 200) return true;
    this.#deadline?.cancel();
    this.status = statusCode;
    this.rawHeaders = rawHeaders;
    this.statusText = statusMessage;
    if (statusCode >= 400) {
      this.#state = State.Handed;
      const core = Attempt.adopt(this.#abort!, statusCode, rawHeaders, resume, statusMessage, (a) =>
        this.#settle({ ok: true, response: a, unlink: noop }),
      );
      this.#core = core;
      return !core.paused;
    }
    this.#state = State.Forwarding;
    // Below 400 the executor only reads its status and headers and tells the policies.
    const head = this as AttemptHead as Attempt;
    if (
      !this.#client.executor.firstDone(
        this.#ticket!,
        { ok: true, response: head, unlink: noop },
        this,
      )
    ) {
      // The executor failed on it and told the caller: the response goes unread.
      this.#state = State.Handed;
      this.#abort?.(new Error('staunch: response released'));
      return false;
    }
    const caller = this.#caller;
    caller.onResponseStarted?.();
    return caller.onHeaders?.(statusCode, rawHeaders, resume, statusMessage);
  }

  onData(chunk: Buffer): boolean | undefined {
    if (this.#state === State.Forwarding) return this.#caller.onData?.(chunk);
    return this.#core?.onData(chunk) ?? false;
  }

  onComplete(rawTrailers: Buffer[] | null): void {
    if (this.#state === State.Forwarding) this.#caller.onComplete?.(rawTrailers);
    else this.#core?.onComplete(rawTrailers);
  }

  onError(error: Error): void {
    switch (this.#state) {
      case State.Waiting:
        markIfStale(error, this);
        this.#fail(error);
        return;
      case State.Forwarding:
        this.#caller.onError?.(error);
        return;
      default:
        this.#core?.onError(error);
    }
  }

  // The executor's sink, once the request is its.

  resolve(attempt: Attempt): void {
    const controller = this.#callerController();
    if (controller.aborted) {
      void attempt.discard(Promise.resolve());
      this.reject(controller.reason);
      return;
    }
    const handler = new LegacyCaller(this.#caller);
    controller.attempt = attempt;
    attempt.forward(handler, controller);
    const headers = attempt.rawHeaders !== undefined ? RAW_ONLY : attempt.headers;
    try {
      handler.onResponseStart(controller, attempt.status, headers, attempt.statusText);
    } catch (error) {
      attempt.fail(error);
      return;
    }
    attempt.flush();
  }

  reject(error: unknown): void {
    try {
      this.#caller.onError?.(surface(error));
    } catch {
      // The handler's own error handler failed: undici would drop this too.
    }
  }

  #callerController(): CallerController {
    this.#controller ??= new CallerController(this.#logical);
    return this.#controller;
  }

  /** Attempt 1 failed before its response (or was aborted): the executor decides. */
  #fail(error: Error): void {
    this.#deadline?.cancel();
    this.#state = State.Handed;
    this.#settle({ ok: false, error });
  }

  #settle(outcome: Outcome<Attempt>): void {
    this.#client.executor.firstDone(this.#ticket!, outcome, this);
  }

  #expire(): void {
    if (this.#state !== State.Waiting) return;
    const error = this.#client.executor.firstDeadline(this.#ticket!);
    this.#stop(error);
    this.#fail(error);
  }

  /** Aborts the dispatch of attempt 1, now or as soon as undici connects it. */
  #stop(reason: Error): void {
    if (this.#abort !== undefined) this.#abort(reason);
    else this.#abortReason = reason;
  }

  #callerAbort(reason: Error | undefined): void {
    const why = reason ?? new Error('The request was aborted');
    switch (this.#state) {
      case State.Waiting:
        this.#logical.abort(why);
        // Before it was sent (from the caller's `onConnect`): the executor sees the abort at once.
        if (this.#ticket === undefined) return;
        this.#stop(why);
        this.#fail(why);
        return;
      case State.Forwarding:
        this.#abort?.(why);
        return;
      default:
        if (this.#controller !== undefined) this.#controller.abort(why);
        else this.#logical.abort(why);
    }
  }
}
