/**
 * Attempt 1 of the undici adapters (`createAgent`, `retryInterceptor`): one
 * handler between undici and the caller's, which hands a response below 400
 * straight through once the executor has been told of it (its admission,
 * `attempt` event and policies: `Executor.first` and `firstDone`). Nothing
 * is held, nothing wrapped, no promise or timer of its own in between.
 *
 * Anything else leaves this path for the executor's retry loop, which then
 * goes on exactly as if it had sent attempt 1 itself: a failure before the
 * response, the attempt's deadline and the caller's abort (each settled at
 * once, the dispatch aborted), and a status of 400 or more, whose response
 * an `Attempt` adopts (attempt.ts) to be discarded or handed over.
 *
 * Two flavours: {@link LegacyFirst} speaks undici 7's legacy handler API on
 * both sides (`createAgent` under `undici.request`, `stream`, `pipeline`,
 * undici's `fetch`: the caller gets undici's own `resume`, raw headers,
 * chunks and trailers, as from a bare `Agent`); {@link StartedFirst} the new
 * API on both (a `compose` chain, undici 8, a new-API caller), the caller's
 * controller driving undici's.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';
import type { FirstSink, FirstTicket, Outcome } from '../executor/index.js';
import { noop, systemClock } from '../internal/clock.js';
import { type Deadline, startSteadyDeadline } from '../internal/deadlines.js';
import { AbortToken } from '../internal/token.js';
import { errorCode } from '../retry/classify.js';
import {
  Attempt,
  AttemptHead,
  CallerController,
  type CoreHandler,
  deliverError,
  LEGACY_CORE,
} from './attempt.js';
import { prepare, type StaunchDispatchOptions, surface } from './call.js';
import type { UndiciRuntime } from './client.js';
import { LegacyCaller, type LegacyHandler } from './legacy.js';
import type { ResolvedTransport } from './options.js';
import { expectSend, markIfStale } from './stale.js';

type Controller = Dispatcher.DispatchController;
type Handler = Dispatcher.DispatchHandler;

/**
 * Runs one logical request for a legacy `caller` over `dispatch`, which
 * takes legacy handlers (undici 7's: `createAgent`'s own `Agent`, or the
 * rest of a `compose` chain), attempt 1 on the path above. `mark`: as for
 * {@link runFirstStarted}.
 * @internal
 */
export function runFirst(
  client: UndiciRuntime,
  dispatch: Dispatcher.Dispatch,
  opts: Dispatcher.DispatchOptions,
  caller: LegacyHandler,
  mark: boolean,
): void {
  new LegacyFirst(client, caller).run(dispatch, opts, mark);
}

/**
 * The same for a `caller` on the new handler API (a `compose` chain's,
 * undici 8's, a legacy caller seen through {@link LegacyCaller}). `mark`:
 * the attempts carry the mark that makes a staunch layer further down pass
 * them through (call.ts, `prepare`).
 * @internal
 */
export function runFirstStarted(
  client: UndiciRuntime,
  dispatch: Dispatcher.Dispatch,
  opts: Dispatcher.DispatchOptions,
  caller: Handler,
  mark: boolean,
): void {
  new StartedFirst(client, caller).run(dispatch, opts, mark);
}

/**
 * The shortest attempt deadline left to undici's headers timer: that timer
 * ticks every half second (undici's `setFastTimeout`), so it fires within
 * about 5 % of a deadline this long.
 */
export const HELD_MIN_MS = 10_000;

/**
 * How much longer than the attempt deadline the total must be for undici's
 * timer to hold the attempt's: that timer may fire half a second late, and
 * the total deadline is never left to it.
 */
export const HELD_MARGIN_MS = 1_000;

/**
 * Whether `createAgent`'s undici `Agent` (transport `t`) can hold attempt
 * 1's deadline (`runtime`'s `timeout.attempt`) once the request is written:
 * on the system clock (an injected clock keeps staunch's deadlines on it),
 * over HTTP/1.1 only (undici times HTTP/2 streams otherwise), with a headers
 * timeout equal to `timeout.attempt` (the defaults: 60 s each), at least
 * {@link HELD_MIN_MS}, a total at least {@link HELD_MARGIN_MS} longer, and a
 * connect timeout no longer (a connection that does not open in time ends
 * the attempt as soon).
 * @internal
 */
export function heldByUndici(runtime: UndiciRuntime, t: ResolvedTransport): boolean {
  const { attempt, total } = runtime.defaults.timeout;
  return (
    runtime.executor.clock === systemClock &&
    !t.allowH2 &&
    t.headers === attempt &&
    t.connect > 0 &&
    t.connect <= attempt &&
    attempt >= HELD_MIN_MS &&
    total - attempt >= HELD_MARGIN_MS
  );
}

/** A held attempt 1 not written yet when undici said its pool was full. */
export interface Unwritten {
  /** `true`: not written yet, look again; at the `last` look it takes staunch's deadline. */
  lookedAt(last: boolean): boolean;
}

/** Held attempts not written when undici said its pool was full, since the last look. */
let unwritten: Unwritten[] = [];
/** Those not written at the last look either: the next look gives them staunch's deadline. */
let stillUnwritten: Unwritten[] = [];
let looking = false;

/**
 * Looks at `first` again after undici's own immediate. undici 7 writes a
 * request on an idle keep-alive connection only after a `setImmediate` (a
 * close pending on it arrives first), and says its pool is full when the
 * request took its last free connection: most such requests are written an
 * immediate later. One immediate for all of them.
 */
export function awaitWrite(first: Unwritten): void {
  unwritten.push(first);
  if (!looking) {
    looking = true;
    setImmediate(lookAtWrites);
  }
}

/**
 * Those written since are undici's to time. Those not yet written get a
 * second look an immediate later (an idle-connection check queued after
 * this one); those not written then wait in undici's queue: they get
 * staunch's deadline.
 */
function lookAtWrites(): void {
  const first = unwritten;
  const second = stillUnwritten;
  unwritten = [];
  stillUnwritten = [];
  for (const f of second) f.lookedAt(true);
  for (const f of first) if (f.lookedAt(false)) stillUnwritten.push(f);
  looking = stillUnwritten.length > 0 || unwritten.length > 0;
  if (looking) setImmediate(lookAtWrites);
}

/**
 * How long a held attempt 1 may have waited for its connection before undici
 * wrote it and still be left to undici's timer, which runs from the write:
 * about the precision of that timer.
 */
export const HELD_SLACK_MS = 500;

/** Where attempt 1 is. */
export enum State {
  /** Sent, before its response. */
  Waiting,
  /** A success, handed straight to the caller's handler. */
  Forwarding,
  /** The executor has the outcome; a response is the adopted attempt's. */
  Handed,
}

/** The raw headers stand for the parsed ones for a legacy caller (legacy.ts). */
const RAW_ONLY: IncomingHttpHeaders = Object.freeze({});

/** What both flavours share: the executor's side of attempt 1, and its ends. */
abstract class FirstBase extends AttemptHead implements FirstSink<Attempt> {
  protected readonly client: UndiciRuntime;
  #logical: AbortToken | undefined;
  protected ticket: FirstTicket | undefined;
  protected state: State = State.Waiting;
  /** An abort asked for before undici connected the dispatch. */
  protected abortReason: Error | undefined;
  #deadline: Deadline | undefined;
  /** Attempt 1's deadline is undici's headers timer once written ({@link heldByUndici}). */
  #held = false;
  /** Clock time a held attempt 1 was sent (its deadline is undici's from the write). */
  #sentAt = 0;

  constructor(client: UndiciRuntime) {
    super();
    this.client = client;
  }

  /** The caller's side of the logical request (its abort, before a hand-over): made when needed. */
  protected get logical(): AbortToken {
    this.#logical ??= new AbortToken();
    return this.#logical;
  }

  /**
   * Tells the caller the request started, as any dispatcher does first,
   * builds the logical request and admits attempt 1 (`Executor.first`);
   * when it may go now, sends it.
   */
  run(dispatch: Dispatcher.Dispatch, opts: Dispatcher.DispatchOptions, mark: boolean): void {
    let call: ReturnType<typeof prepare>;
    try {
      this.announce();
      call = prepare(this.client, dispatch, opts, this.logical.signal, mark);
    } catch (error) {
      this.reject(error);
      return;
    }
    const ticket = this.client.executor.first(call, call, this);
    if (ticket === undefined) return;
    this.ticket = ticket;
    const { timeout } = this.client.defaults;
    if (
      !mark &&
      this.client.undiciHoldsDeadline === true &&
      opts.body == null &&
      opts.headersTimeout == null &&
      (opts as StaunchDispatchOptions).staunch === undefined &&
      ticket.limit === Math.min(timeout.attempt, timeout.total)
    ) {
      this.#sentAt = this.client.executor.clock.now();
      this.#sendHeld(dispatch, call.options);
    } else this.#send(dispatch, call.options, ticket.limit);
  }

  /**
   * Sends attempt 1 with its deadline left to undici's headers timer, which
   * runs from the moment the request is written ({@link heldByUndici}). It
   * is written at once, or after undici's idle-socket check (an immediate),
   * or once a new connection is up ({@link wroteFresh}). If it is not
   * written yet and undici says its pool is full, it may wait in undici's
   * queue, untimed: if it is still not written two immediates later, it
   * gets staunch's deadline ({@link awaitWrite}).
   */
  #sendHeld(dispatch: Dispatcher.Dispatch, opts: Dispatcher.DispatchOptions): void {
    this.#held = true;
    let free: boolean;
    try {
      free = dispatch(opts, this as unknown as Handler);
    } catch (error) {
      this.failed(error as Error);
      return;
    }
    if (!free && !this.written && this.state === State.Waiting) awaitWrite(this);
  }

  /**
   * Looked at after an immediate ({@link lookAtWrites}): `true` if attempt 1
   * is still waiting to be written and this is not the `last` look; at the
   * last, such an attempt gets staunch's deadline for the time it has left.
   */
  lookedAt(last: boolean): boolean {
    if (this.written || this.state !== State.Waiting) return false;
    if (!last) return true;
    this.#holdRest();
    return false;
  }

  /**
   * Written on a new connection (stale.ts tells, right after the write): a
   * held attempt 1 that waited for it longer than {@link HELD_SLACK_MS} gets
   * staunch's deadline for the time it has left, since undici's starts now.
   */
  wroteFresh(): void {
    if (!this.#held || this.#deadline !== undefined || this.state !== State.Waiting) return;
    if (this.client.executor.clock.now() - this.#sentAt > HELD_SLACK_MS) this.#holdRest();
  }

  /** Staunch's deadline for what is left of held attempt 1's time (undici's timer does not run yet). */
  #holdRest(): void {
    const { clock } = this.client.executor;
    const { timeout } = this.client.defaults;
    const left = this.#sentAt + Math.min(timeout.attempt, timeout.total) - clock.now();
    if (left <= 0) this.#expire();
    else this.#deadline = startSteadyDeadline(clock, left, this);
  }

  /** Sends attempt 1 under its deadline of `limit` ms. */
  #send(dispatch: Dispatcher.Dispatch, opts: Dispatcher.DispatchOptions, limit: number): void {
    if (Number.isFinite(limit)) {
      // On the steady list: one timer while attempts come and go beside undici's (deadlines.ts).
      this.#deadline = startSteadyDeadline(this.client.executor.clock, limit, this);
    }
    try {
      dispatch(opts, this as unknown as Handler);
    } catch (error) {
      this.failed(error as Error);
    }
  }

  /** Attempt 1's ticket (`Executor.first`). */
  #flight(): FirstTicket {
    return this.ticket!;
  }

  /** The response started: its head is read, the deadline is over. `false`: not attempt 1's. */
  protected started(statusCode: number, statusMessage: string | undefined): boolean {
    // 1xx informational responses are not the response.
    if (this.state !== State.Waiting || statusCode < 200) return false;
    this.#deadline?.cancel();
    this.status = statusCode;
    this.statusText = statusMessage;
    return true;
  }

  /**
   * A response below 400: the executor learns from it. `true`: hand it to
   * the caller (forwarding); `false`: the executor failed on it and told the
   * caller, and the response is released.
   */
  protected succeeded(): boolean {
    this.state = State.Forwarding;
    // Below 400 the executor only reads its status and headers and tells the policies.
    const head = this as AttemptHead as Attempt;
    const outcome = { ok: true as const, response: head, unlink: noop };
    if (this.client.executor.firstDone(this.ticket!, outcome, this)) return true;
    this.state = State.Handed;
    this.stop(new Error('staunch: response released'));
    return false;
  }

  /** A response of 400 or more, adopted by `attempt`: the executor decides. */
  protected adopted(attempt: Attempt): void {
    this.settle({ ok: true, response: attempt, unlink: noop });
  }

  /** Attempt 1 failed before its response: the executor decides. */
  protected failed(error: Error): void {
    if (this.#held && errorCode(error) === 'UND_ERR_HEADERS_TIMEOUT') {
      // undici's headers timer held the deadline (it has closed the socket): the deadline ran out.
      this.#fail(this.client.executor.firstDeadline(this.#flight()));
      return;
    }
    markIfStale(error, this);
    this.#fail(error);
  }

  #fail(error: Error): void {
    this.#deadline?.cancel();
    this.state = State.Handed;
    this.settle({ ok: false, error });
  }

  protected settle(outcome: Outcome<Attempt>): void {
    this.client.executor.firstDone(this.#flight(), outcome, this);
  }

  /** Attempt 1's deadline fired (the deadline list calls it: no closure per request). */
  onDeadline(): void {
    this.#expire();
  }

  #expire(): void {
    if (this.state !== State.Waiting) return;
    const error = this.client.executor.firstDeadline(this.#flight());
    this.stop(error);
    this.#fail(error);
  }

  /** undici has written attempt 1: it called `onConnect` / `onRequestStart`, which come with the write. */
  protected abstract get written(): boolean;

  /** The caller's start callback: how it will abort. */
  protected abstract announce(): void;

  /** Aborts attempt 1's dispatch, now or as soon as undici connects it. */
  protected abstract stop(reason: Error): void;

  /** The caller's abort, while attempt 1 is this handler's. */
  protected abortFirst(reason: Error): void {
    switch (this.state) {
      case State.Waiting:
        this.logical.abort(reason);
        // Before it was sent (from the caller's own start callback): the executor sees it at once.
        if (this.ticket === undefined) return;
        this.stop(reason);
        this.#fail(reason);
        return;
      case State.Forwarding:
        this.stop(reason);
        return;
      default:
        this.logical.abort(reason);
    }
  }

  // The executor's sink, once the request is its: a later attempt's response, or the error.

  resolve(attempt: Attempt): void {
    const controller = this.callerController();
    if (controller.aborted) {
      void attempt.discard(Promise.resolve());
      this.reject(controller.reason);
      return;
    }
    const handler = this.callerHandler();
    controller.attempt = attempt;
    attempt.forward(handler, controller);
    const headers =
      handler instanceof LegacyCaller && attempt.rawHeaders !== undefined
        ? RAW_ONLY
        : attempt.headers;
    try {
      handler.onResponseStart?.(controller, attempt.status, headers, attempt.statusText);
    } catch (error) {
      attempt.fail(error);
      return;
    }
    attempt.flush();
  }

  abstract reject(error: unknown): void;

  /** The caller's controller for a later attempt's response. */
  protected abstract callerController(): CallerController;

  /** The caller's handler on the new API, for a later attempt's response. */
  protected abstract callerHandler(): Handler;
}

/**
 * Ends a legacy `caller`'s request with `error` (as the caller should see it).
 * @internal
 */
export function rejectLegacy(caller: LegacyHandler, error: unknown): void {
  try {
    caller.onError?.(surface(error));
  } catch {
    // The handler's own error handler failed: undici would drop this too.
  }
}

/**
 * Attempt 1 on undici 7's legacy handler API, for a legacy caller.
 * @internal
 */
export class LegacyFirst extends FirstBase {
  readonly #caller: LegacyHandler;
  /** undici's abort of this dispatch, from `onConnect`. */
  #abort: ((reason?: Error) => void) | undefined;
  /** The adopted attempt's handler, once a response of 400 or more is the executor's. */
  #core: CoreHandler | undefined;
  #controller: CallerController | undefined;
  /** What the caller calls to abort (given to its `onConnect`). */
  readonly callerAbort = (reason?: Error): void => {
    if (this.state === State.Handed && this.#controller !== undefined) {
      this.#controller.abort(reason as Error);
    } else this.abortFirst(reason ?? new Error('The request was aborted'));
  };

  constructor(client: UndiciRuntime, caller: LegacyHandler) {
    super(client);
    this.#caller = caller;
  }

  protected get written(): boolean {
    return this.#abort !== undefined;
  }

  protected announce(): void {
    // No context, as undici's own Request passes none to a legacy handler.
    this.#caller.onConnect?.(this.callerAbort);
  }

  onConnect(abort: (reason?: Error) => void): void {
    if (this.state !== State.Waiting || this.abortReason !== undefined) {
      abort(this.abortReason);
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
    // Not attempt 1's response (a 1xx: go on; after it settled: nothing more is read).
    if (!this.started(statusCode, statusMessage)) return this.state === State.Waiting;
    this.rawHeaders = rawHeaders;
    if (statusCode >= 400) {
      this.state = State.Handed;
      const core = Attempt.adopt(this.#abort!, statusCode, rawHeaders, resume, statusMessage, (a) =>
        this.adopted(a),
      );
      this.#core = core;
      return !core.paused;
    }
    if (!this.succeeded()) return false;
    const caller = this.#caller;
    caller.onResponseStarted?.();
    return caller.onHeaders?.(statusCode, rawHeaders, resume, statusMessage);
  }

  onData(chunk: Buffer): boolean | undefined {
    if (this.state === State.Forwarding) return this.#caller.onData?.(chunk);
    return this.#core?.onData(chunk) ?? false;
  }

  onComplete(rawTrailers: Buffer[] | null): void {
    if (this.state === State.Forwarding) this.#caller.onComplete?.(rawTrailers);
    else this.#core?.onComplete(rawTrailers);
  }

  onError(error: Error): void {
    if (this.state === State.Waiting) this.failed(error);
    else if (this.state === State.Forwarding) this.#caller.onError?.(error);
    else this.#core?.onError(error);
  }

  protected stop(reason: Error): void {
    if (this.#abort !== undefined) this.#abort(reason);
    else this.abortReason = reason;
  }

  reject(error: unknown): void {
    rejectLegacy(this.#caller, error);
  }

  protected callerController(): CallerController {
    this.#controller ??= new CallerController(this.logical);
    return this.#controller;
  }

  protected callerHandler(): LegacyCaller {
    return new LegacyCaller(this.#caller);
  }
}

/**
 * The caller's controller of {@link StartedFirst}: while attempt 1 is its
 * own, its abort, pause and resume are attempt 1's; once the executor has
 * handed over a later attempt, the `CallerController` it extends drives that.
 */
class StartedController extends CallerController {
  readonly #first: StartedFirst;

  constructor(logical: AbortToken, first: StartedFirst) {
    super(logical);
    this.#first = first;
  }

  override get rawHeaders(): Buffer[] | null {
    return this.attempt === undefined ? (this.#first.rawHeaders ?? null) : super.rawHeaders;
  }

  override get rawTrailers(): Buffer[] | null {
    return this.attempt === undefined ? this.#first.rawTrailers : super.rawTrailers;
  }

  protected override aborting(reason: Error): void {
    if (this.attempt === undefined) this.#first.callerAbort(reason);
    else super.aborting(reason);
  }

  protected override pausing(): void {
    if (this.attempt === undefined) this.#first.core?.pause();
    else super.pausing();
  }

  protected override resuming(): void {
    if (this.attempt === undefined) this.#first.core?.resume();
    else super.resuming();
  }
}

/** Attempt 1 on the new handler API, towards undici and towards the caller. */
class StartedFirst extends FirstBase {
  readonly #caller: Handler;
  readonly controller: StartedController;
  /** undici's controller of attempt 1: while forwarding, the caller's drives it. */
  core: Controller | undefined;
  /** The attempt that took over a response of 400 or more. */
  #adopted: Attempt | undefined;
  rawTrailers: Buffer[] | null = null;

  constructor(client: UndiciRuntime, caller: Handler) {
    super(client);
    this.#caller = caller;
    this.controller = new StartedController(this.logical, this);
  }

  protected get written(): boolean {
    return this.core !== undefined;
  }

  protected announce(): void {
    // The context undici itself passes: none on undici 7 (its legacy core), null on undici 8.
    this.#caller.onRequestStart?.(this.controller, LEGACY_CORE ? undefined : null);
  }

  onRequestStart(controller: Controller): void {
    if (this.state !== State.Waiting || this.abortReason !== undefined) {
      controller.abort(this.abortReason ?? new Error('staunch: attempt released'));
      return;
    }
    this.core = controller;
    expectSend(this);
  }

  onResponseStart(
    controller: Controller,
    statusCode: number,
    headers: IncomingHttpHeaders,
    statusMessage?: string,
  ): void {
    if (!this.started(statusCode, statusMessage)) return;
    this.core = controller;
    this.parsed = headers;
    // undici 7's `UnwrapController` carries the raw headers it parsed these from.
    this.rawHeaders = (controller as { rawHeaders?: Buffer[] | null }).rawHeaders ?? undefined;
    if (statusCode >= 400) {
      this.state = State.Handed;
      this.#adopted = Attempt.adoptStarted(controller, statusCode, headers, statusMessage, (a) =>
        this.adopted(a),
      );
      return;
    }
    if (this.succeeded()) {
      this.#caller.onResponseStart?.(this.controller, statusCode, headers, statusMessage);
    }
  }

  onResponseData(controller: Controller, chunk: Buffer): void {
    if (this.state === State.Forwarding) this.#caller.onResponseData?.(this.controller, chunk);
    else this.#adopted?.onResponseData(controller, chunk);
  }

  onResponseEnd(controller: Controller, trailers: IncomingHttpHeaders): void {
    if (this.state === State.Forwarding) {
      this.rawTrailers = (controller as { rawTrailers?: Buffer[] | null }).rawTrailers ?? null;
      this.#caller.onResponseEnd?.(this.controller, trailers);
    } else this.#adopted?.onResponseEnd(controller, trailers);
  }

  onResponseError(controller: Controller | undefined, error: Error): void {
    if (this.state === State.Waiting) this.failed(error);
    else if (this.state === State.Forwarding) {
      this.#caller.onResponseError?.(this.controller, error);
    } else this.#adopted?.onResponseError(controller, error);
  }

  /** The caller's abort while no later attempt has been handed over. */
  callerAbort(reason: Error): void {
    this.abortFirst(reason);
  }

  protected stop(reason: Error): void {
    if (this.core !== undefined) this.core.abort(reason);
    else this.abortReason = reason;
  }

  reject(error: unknown): void {
    deliverError(this.#caller, this.controller, surface(error));
  }

  protected callerController(): CallerController {
    return this.controller;
  }

  protected callerHandler(): Handler {
    return this.#caller;
  }
}
