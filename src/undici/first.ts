/**
 * Attempt 1 of the undici adapters (`createAgent`, `retryInterceptor`), and
 * the caller's side of the logical request it starts. Admitted by the
 * executor (`Executor.first`), sent by this handler under its deadline;
 * its outcome goes to `Executor.firstDone`. A success passes straight
 * through to the caller's handler; anything else (a failure, the deadline,
 * the caller's abort, a status the executor keeps) is the executor's retry
 * loop's, which sends later attempts as plain {@link Attempt}s and ends
 * here, in `resolve` or `reject`. The caller's handler gets one controller
 * for the whole request (`CallerController`), whichever attempt it drives.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';
import type { FirstSink, FirstTicket, Outcome } from '../executor/index.js';
import { noop } from '../internal/clock.js';
import { type Deadline, startSteadyDeadline } from '../internal/deadlines.js';
import { AbortToken } from '../internal/token.js';
import { Attempt, deliverError } from './attempt.js';
import { DispatchCall, surface } from './call.js';
import type { UndiciRuntime } from './client.js';

type Controller = Dispatcher.DispatchController;
type Handler = Dispatcher.DispatchHandler;

/** @internal See the module's comment. `handler` speaks the current API (legacy.ts adapts others). */
export class FirstAttempt extends Attempt implements FirstSink<Attempt> {
  readonly #client: UndiciRuntime;
  readonly #handler: Handler;
  /** The caller's controller, also the logical request's signal (aborted before a hand-over). */
  readonly #controller: CallerController;
  #ticket: FirstTicket | undefined;
  #deadline: Deadline | undefined;
  /** The caller was told the request started (`onRequestStart`), by the first attempt to start. */
  #announced = false;
  /** The logical request ended: handed over, or failed. */
  #ended = false;

  constructor(client: UndiciRuntime, handler: Handler) {
    super();
    this.#client = client;
    this.#handler = handler;
    this.#controller = new CallerController(this);
  }

  /** Admits attempt 1 and, when it may go now, sends it under its deadline (`mark`: call.ts). */
  run(dispatch: Dispatcher.Dispatch, opts: Dispatcher.DispatchOptions, mark: boolean): void {
    let call: DispatchCall;
    try {
      const signal = this.#controller.signal;
      call = new DispatchCall(this.#client, dispatch, opts, signal, mark, this);
    } catch (error) {
      this.reject(error);
      return;
    }
    const { executor } = this.#client;
    const ticket = executor.first(call, call, this);
    // Not now (an admission that waits, a refusal, an `end` listener): the executor sends it.
    if (ticket === undefined) return;
    this.#ticket = ticket;
    if (Number.isFinite(ticket.limit)) {
      // On the steady list: one timer while attempts come and go beside undici's (deadlines.ts).
      this.#deadline = startSteadyDeadline(executor.clock, ticket.limit, this);
    }
    this.dispatchOn(dispatch, call.optionsFor(ticket.limit), !call.replayable);
  }

  // What every attempt of the request tells its caller.

  override started(context: unknown): void {
    if (this.#announced) return;
    this.#announced = true;
    this.#handler.onRequestStart?.(this.#controller, context);
  }

  override informational(status: number, headers: IncomingHttpHeaders, text?: string): void {
    if (this.#ended || this.#controller.aborted) return;
    try {
      this.#handler.onResponseStart?.(this.#controller, status, headers, text);
    } catch {
      // A throw from a 1xx callback has nowhere to go: the final response still follows.
    }
  }

  // Attempt 1's outcome, to the executor (this attempt is the response below 400 it hands on).

  protected override responded(): void {
    this.#settle({ ok: true, response: this, unlink: noop });
  }

  protected override failed(error: Error): void {
    this.#settle({ ok: false, error });
  }

  /** Attempt 1's deadline fired (the deadline list calls it: no closure per request). */
  onDeadline(): void {
    if (this.phase !== 'sent') return;
    const error = this.#client.executor.firstDeadline(this.#ticket!);
    // Settled before the abort: undici calls `onResponseError` from within it.
    this.#settle({ ok: false, error });
    this.abortDispatch(error);
  }

  /**
   * Hands attempt 1's outcome to the executor, once: the phase moves on
   * first, so an abort that re-enters this handler (undici reports it
   * synchronously) finds it settled and the executor hears of it once.
   */
  #settle(outcome: Outcome<Attempt>): void {
    this.#deadline?.cancel();
    if (this.phase === 'sent') this.phase = 'done';
    if (this.#client.executor.firstDone(this.#ticket!, outcome, this)) this.resolve(this);
    // Ended already (a policy or classifier threw): a response kept for the executor is released.
    else if (this.#ended) void this.discard(Promise.resolve());
  }

  /** The caller's abort before any response was handed over (the signal has fired). */
  abortLogical(reason: Error): void {
    // Attempt 1 in flight is this handler's to end; otherwise the executor sees the abort.
    if (this.#ticket === undefined || this.phase !== 'sent') return;
    this.#settle({ ok: false, error: reason });
    this.abortDispatch(reason);
  }

  // FirstSink: where the logical request ends.

  resolve(attempt: Attempt): void {
    if (this.#ended || this.#controller.aborted) {
      void attempt.discard(Promise.resolve());
      if (!this.#ended) this.reject(this.#controller.reason);
      return;
    }
    this.#ended = true;
    attempt.forward(this.#handler, this.#controller);
  }

  reject(error: unknown): void {
    if (this.#ended) return;
    this.#ended = true;
    deliverError(this.#handler, this.#controller, surface(error));
  }
}

/**
 * Before a response is handed over its abort ends the request (`abortLogical`); after, it
 * drives the attempt. It is also the logical request's signal, which the executor reads
 * (token.ts): aborted by the caller before a hand-over.
 */
export class CallerController extends AbortToken implements Controller {
  // The controller's state, plain fields rather than getters.
  paused = false;
  override reason: Error | null = null;
  /** The attempt handed over, once there is one. */
  attempt: Attempt | undefined;
  readonly #owner: FirstAttempt;

  constructor(owner: FirstAttempt) {
    super();
    this.#owner = owner;
  }

  /** The response's raw headers as undici read them (undici 7), for a caller on the legacy API. */
  get rawHeaders(): Buffer[] | null {
    return this.attempt?.rawHeaders ?? null;
  }

  /** The same for the trailers, once the body has ended. */
  get rawTrailers(): Buffer[] | null {
    return this.attempt?.rawTrailers ?? null;
  }

  override abort(reason: Error): void {
    if (this.aborted) return;
    const error = reason ?? new Error('The request was aborted');
    if (this.attempt !== undefined) {
      this.aborted = true;
      this.reason = error;
      this.attempt.callerAbort(error);
      return;
    }
    // The signal fires first (a retry's attempt, a wait), then attempt 1 in flight ends.
    super.abort(error);
    this.#owner.abortLogical(error);
  }

  pause(): void {
    this.paused = true;
    this.attempt?.pauseSocket();
  }

  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    this.attempt?.flush();
  }
}
