/**
 * The executor: one logical request, many attempts. It knows nothing of
 * fetch or undici; an adapter hands it an `Exchange` (how to send one attempt
 * and read its response) and it decides, per DESIGN.md, whether and when to
 * send again, inside the deadline, and what to hand back.
 */
import {
  DeadlineExceededError,
  type DeadlineScope,
  NetworkError,
  type StaunchErrorOptions,
} from './errors.js';
import {
  emit,
  type GiveUpEvent,
  type GiveUpReason,
  type RetryEvent,
  type StaunchListeners,
  type WaitReason,
} from './events.js';
import { type Clock, noop, type Random } from './internal/clock.js';
import { type Deadline, startDeadline, startSteadyDeadline } from './internal/deadlines.js';
import { redactUrl, scrubbedCause, scrubError } from './internal/redact.js';
import { linkSignal } from './internal/signals.js';
import { AbortToken } from './internal/token.js';
import type { RetryBudget } from './policy/budget.js';
import { type AdmitContext, admit, feedback, type Gate, OPEN_GATE } from './policy/gate.js';
import type { LedgerGate } from './policy/ledger.js';
import type { Policies, PolicyRequest } from './policy/policies.js';
import { ignoreRejection, isPromiseLike } from './policy/store-call.js';
import type { Exchange, LogicalRequest } from './request.js';
import {
  classifyError,
  classifyStatus,
  errorCode,
  isInvalidRequest,
  isStaleConnection,
  refineStatus,
  type StatusClassifier,
} from './retry/classify.js';
import { type AttemptVerdict, decide } from './retry/decide.js';
import {
  type HeaderSource,
  type PacingReader,
  type ResponsePacing,
  responsePacing,
  type ServerPacing,
} from './retry/server-delay.js';

export type { Exchange, LogicalRequest } from './request.js';

export interface ExecutorOptions {
  clock: Clock;
  random: Random;
  on: StaunchListeners;
  /** Per-key policies; absent ones are off. */
  policies?: Policies | undefined;
  /** Refines the retry table for failed statuses (the `classify` client option). */
  classify?: StatusClassifier | undefined;
  /** Reads pacing headers beyond the standard ones (the `pacing` client option). */
  pacing?: PacingReader | undefined;
}

/** How one attempt ended: a response (and how to unlink the caller's signal from it), or a failure. */
export type Outcome<R> =
  | { ok: true; response: R; unlink: () => void }
  | { ok: false; error: unknown };

/** Where a logical request that an adapter started with {@link Executor.first} ends: once, one of the two. */
export interface FirstSink<R> {
  resolve(response: R): void;
  reject(error: unknown): void;
}

/** Ends `sink` with how `pending` settles. */
function settleInto<R>(pending: Promise<R>, sink: FirstSink<R>): void {
  pending.then(
    (response) => sink.resolve(response),
    (error: unknown) => sink.reject(error),
  );
}

/**
 * Attempt 1 admitted for an adapter to send itself (see {@link Executor.first}):
 * it must settle within `limit` ms (the attempt's deadline, which the adapter
 * arms; `Infinity` for none), then be handed to {@link Executor.firstDone}.
 */
export interface FirstTicket {
  readonly limit: number;
}

/** A retry scheduled after a failure, said to `retry` listeners when its attempt leaves. */
interface PendingRetry {
  readonly failedAt: number;
  readonly event: RetryEvent;
}

/** What an attempt that is not handed back taught: how to go on. */
interface Lesson {
  readonly verdict: AttemptVerdict;
  readonly status: number | undefined;
  readonly code: string | undefined;
  /** What kind of refusal a classifier saw (`llm()`: `requests`, `tokens`, a quota code…). */
  readonly kind: string | undefined;
  readonly pacing: ServerPacing | undefined;
  /** Clock time the attempt ended. */
  readonly done: number;
}

/** Who may retry a failure without a response, and why it is worth retrying. */
function errorVerdict(error: unknown, stale: boolean): AttemptVerdict {
  if (error instanceof DeadlineExceededError)
    return { scope: 'replayable', reason: 'timeout', stale };
  const kind = classifyError(error);
  if (kind === 'unsent') return { scope: 'any', reason: 'unsent', stale };
  return { scope: kind === 'fatal' ? 'never' : 'replayable', reason: 'maybe-sent', stale };
}

/** Credits a first attempt to the budget; a failing store is ignored. */
function deposit(budget: RetryBudget, key: string, now: number): void {
  try {
    ignoreRejection(budget.deposit(key, now));
  } catch {
    // Policies learn on a best-effort basis; the request goes on.
  }
}

/**
 * Emits `giveUp`; a replayable request's event also carries `replay`
 * (non-enumerable, so logs that print the event do not copy the body).
 */
function sayGiveUp(on: StaunchListeners, request: LogicalRequest, event: GiveUpEvent): void {
  const listener = on.giveUp;
  if (listener === undefined) return;
  if (request.replayable && request.replay !== undefined) {
    const replay = request.replay();
    if (replay !== undefined) Object.defineProperty(event, 'replay', { value: replay });
  }
  emit(listener, event);
}

/**
 * One logical request on its way: what every attempt shares (key, deadline,
 * the redacted URL, the retry state) in one object, which is also the
 * policies' admission context, so an attempt admits without allocating.
 */
class Flight<R> implements AdmitContext {
  readonly request: LogicalRequest;
  readonly exchange: Exchange<R>;
  readonly clock: Clock;
  readonly on: StaunchListeners;
  readonly key: string;
  readonly deadline: number;
  /** The attempt being admitted or sent. */
  attempt = 1;
  previousDelay = 0;
  lastError: unknown;
  /** The retry under way: told to `retry` listeners once its attempt actually leaves. */
  pending: PendingRetry | undefined;
  /** An adapter's own attempt 1 ({@link Executor.first}): its gate, start, deadline. */
  gate: Gate = OPEN_GATE;
  started = 0;
  limit = Number.POSITIVE_INFINITY;
  scope: DeadlineScope = 'total';
  #redacted: string | undefined;

  constructor(
    request: LogicalRequest,
    exchange: Exchange<R>,
    clock: Clock,
    on: StaunchListeners,
    policies: Policies | undefined,
    now: number,
    key?: string,
  ) {
    this.request = request;
    this.exchange = exchange;
    this.clock = clock;
    this.on = on;
    this.deadline = now + request.timeout.total;
    this.key = key ?? (policies === undefined ? '' : policies.key(request));
  }

  url(): string {
    this.#redacted ??= redactUrl(this.request.url);
    return this.#redacted;
  }

  /** A policy refused the attempt: `giveUp`, then its error (the previous failure its cause). */
  refusal(reason: GiveUpReason, make: (context: StaunchErrorOptions) => Error): Error {
    const { request, attempt, lastError } = this;
    const url = this.url();
    sayGiveUp(this.on, request, { method: request.method, url, attempts: attempt - 1, reason });
    return make({
      method: request.method,
      url,
      attempts: attempt - 1,
      ...(lastError !== undefined && { cause: scrubbedCause(lastError, request.secrets()) }),
    });
  }

  onWait(reason: WaitReason, duration: number): void {
    const listener = this.on.wait;
    if (listener === undefined) return;
    const { method } = this.request;
    emit(listener, { method, url: this.url(), attempt: this.attempt, reason, duration });
  }
}

export class Executor {
  readonly #clock: Clock;
  readonly #random: Random;
  readonly #on: StaunchListeners;
  readonly #policies: Policies | undefined;
  readonly #classify: StatusClassifier | undefined;
  readonly #pacing: ResponsePacing;

  constructor(options: ExecutorOptions) {
    this.#classify = options.classify;
    this.#pacing = responsePacing(options.pacing);
    this.#clock = options.clock;
    this.#random = options.random;
    this.#on = options.on;
    const p = options.policies;
    this.#policies =
      p && (p.breaker || p.budget || p.limiter || p.concurrency || p.hold) ? p : undefined;
  }

  /** The clock deadlines and waits run on (an adapter arms attempt 1's deadline on it: {@link first}). */
  get clock(): Clock {
    return this.#clock;
  }

  /** Runs `request` through `exchange` until it succeeds, gives up or runs out of time. */
  run<R>(request: LogicalRequest, exchange: Exchange<R>): Promise<R> {
    if (this.#on.end !== undefined) return this.#ending(request, exchange);
    return new Promise<R>((resolve, reject) => this.#start(request, exchange, resolve, reject));
  }

  /**
   * {@link run} with callbacks: exactly one of `resolve` and `reject` is
   * called, once, possibly before this returns. With an exchange that has
   * `sendWith`, a first attempt that succeeds is handed back from the
   * transport's own callback: no promise, no microtask turn in between.
   */
  runWith<R>(
    request: LogicalRequest,
    exchange: Exchange<R>,
    resolve: (response: R) => void,
    reject: (error: unknown) => void,
  ): void {
    if (this.#on.end !== undefined) this.#ending(request, exchange).then(resolve, reject);
    else this.#start(request, exchange, resolve, reject);
  }

  /**
   * {@link runWith} for an adapter that sends attempt 1 itself, on a path of
   * its own (staunch/undici's agent: a handler that hands a success straight
   * to the caller's, with nothing in between). Admits attempt 1 exactly as
   * `runWith` would, and when it may leave at once returns its ticket: the
   * adapter sends it, aborts it after `ticket.limit` ms with
   * {@link firstDeadline}'s error, and hands its outcome to
   * {@link firstDone}. Otherwise (an admission that waits, a refusal, no
   * time left, an `end` listener, which counts attempts here) returns
   * `undefined` and the request runs here, ending in `sink`.
   */
  first<R>(
    request: LogicalRequest,
    exchange: Exchange<R>,
    sink: FirstSink<R>,
    key?: string,
  ): FirstTicket | undefined {
    if (this.#on.end !== undefined) {
      settleInto(this.#ending(request, exchange), sink);
      return undefined;
    }
    const flight = this.#open(request, exchange, key);
    if (!(flight instanceof Flight)) {
      settleInto(flight, sink);
      return undefined;
    }
    Executor.#limit(flight);
    return flight;
  }

  /** Attempt 1's deadline: its own, or what is left of the total, whichever comes first. */
  static #limit(flight: Flight<unknown>): void {
    const remaining = flight.deadline - flight.started;
    const { timeout } = flight.request;
    flight.scope = timeout.attempt < remaining ? 'attempt' : 'total';
    flight.limit = Math.min(timeout.attempt, remaining);
  }

  /**
   * The policy key of a request whose attempt 1 may take an adapter's lean
   * path (staunch/undici's agent): one that nothing needs to hear of while
   * it succeeds (no `end`, `attempt` or `attemptStart` listener). `''` with
   * the policies off; `undefined`: not such a request, take {@link first}.
   * The key goes on to {@link leanFirst}, and to {@link first} if that
   * refuses: the key function is asked once a request, as on the full path.
   */
  leanKey(request: PolicyRequest): string | undefined {
    const on = this.#on;
    if (on.end !== undefined || on.attempt !== undefined || on.attemptStart !== undefined) {
      return undefined;
    }
    const policies = this.#policies;
    return policies === undefined ? '' : policies.key(request);
  }

  /**
   * Attempt 1 on the lean path, of `key` ({@link leanKey}): on a quiet key
   * (the policies off, or the ledger counting for them: policy/ledger.ts),
   * admitted at `now` with nothing built; returns the gate it goes with.
   * The adapter then sends it under its deadline (`timeout.attempt`, or the
   * total if that is shorter); a response below 400 goes to
   * {@link leanSucceeded}, and anything else first builds the flight with
   * {@link leanAdopt}, to go on as after {@link first}. `undefined`: not
   * admitted, nothing counted: take {@link first}.
   */
  leanFirst(key: string, now: number): Gate | undefined {
    const policies = this.#policies;
    if (policies === undefined) return OPEN_GATE;
    return policies.ledgers?.send(key, now);
  }

  /**
   * A lean attempt 1 ({@link leanFirst}) that went with `gate`, sent at
   * `started`, answered with `status` below 400: the policies are told, as
   * {@link firstSucceeded} tells them; the adapter hands the response over.
   */
  leanSucceeded(
    key: string,
    gate: Gate,
    status: number,
    headers: HeaderSource,
    started: number,
  ): void {
    gate.release();
    const policies = this.#policies;
    if (policies === undefined) return;
    const done = this.#clock.now();
    const pacing = this.#pacing(headers, status, done, policies.limiter !== undefined);
    this.#tellSuccess(policies, key, gate, status, pacing, undefined, started, done);
  }

  /**
   * The flight of a lean attempt 1 ({@link leanFirst}: admitted with `gate`,
   * sent at `started`) that did not simply succeed: its ticket, as
   * {@link first} would have returned it, for {@link firstDone} and
   * {@link firstDeadline}.
   */
  leanAdopt<R>(
    request: LogicalRequest,
    exchange: Exchange<R>,
    key: string,
    gate: Gate,
    started: number,
  ): FirstTicket {
    const flight = new Flight(
      request,
      exchange,
      this.#clock,
      this.#on,
      this.#policies,
      started,
      key,
    );
    flight.gate = gate;
    flight.started = started;
    Executor.#limit(flight);
    return flight;
  }

  /**
   * The adapter's attempt 1 ended with `outcome`. `true`: a response to hand
   * to the caller now (the policies and listeners have been told, as for any
   * attempt); the adapter does that itself. `false`: the request goes on here
   * (retries, or the end of it), ending in `sink`.
   */
  firstDone<R>(ticket: FirstTicket, outcome: Outcome<R>, sink: FirstSink<R>): boolean {
    const value = outcome.ok ? outcome.response : outcome.error;
    return this.#firstEnd(ticket as Flight<R>, outcome.ok, value, outcome, sink);
  }

  /**
   * {@link firstDone} for a response below 400, without an outcome object
   * (one allocation fewer on every success of the undici adapters).
   */
  firstSucceeded<R>(ticket: FirstTicket, response: R, sink: FirstSink<R>): boolean {
    return this.#firstEnd(ticket as Flight<R>, true, response, undefined, sink);
  }

  /** Attempt 1 of an adapter ended: learns from it, and goes on here unless it is handed back. */
  #firstEnd<R>(
    flight: Flight<R>,
    ok: boolean,
    value: unknown,
    outcome: Outcome<R> | undefined,
    sink: FirstSink<R>,
  ): boolean {
    let lesson: Lesson | undefined;
    try {
      lesson = this.#learnFrom(flight, ok, value, flight.gate, flight.started);
    } catch (error) {
      sink.reject(error);
      return false;
    }
    if (lesson === undefined) return true;
    const failed = outcome ?? { ok: true, response: value as R, unlink: noop };
    settleInto(this.#loop(flight, undefined, { outcome: failed, lesson }), sink);
    return false;
  }

  /** The error that ends an adapter's attempt 1 when its `limit` has passed. */
  firstDeadline(ticket: FirstTicket): DeadlineExceededError {
    const flight = ticket as Flight<unknown>;
    return this.#deadline(flight.request, flight.url(), flight.scope, flight.attempt);
  }

  /** {@link run} for a client with an `end` listener: counts the attempts, says `end`. */
  #ending<R>(request: LogicalRequest, exchange: Exchange<R>): Promise<R> {
    const listener = this.#on.end!;
    const started = this.#clock.now();
    const end = (fields: { status?: number; code?: string }, attempts: number): void =>
      emit(listener, {
        method: request.method,
        url: redactUrl(request.url),
        attempts,
        ...fields,
        duration: this.#clock.now() - started,
      });
    let attempts = 0;
    // Delegates rather than spreads: an adapter's exchange may be a class instance
    // (the undici interceptor's), whose methods a spread would drop.
    const counting: Exchange<R> = {
      send: (signal, attempt) => {
        attempts = attempt;
        return exchange.send(signal, attempt);
      },
      status: (response) => exchange.status(response),
      headers: (response) => exchange.headers(response),
      discard: (response, stop) => exchange.discard(response, stop),
      resendable: (unsent) => exchange.resendable(unsent),
      ...(exchange.handOver !== undefined && {
        handOver: (response: R, unlink: () => void) => exchange.handOver!(response, unlink),
      }),
      ...(exchange.tokenSignal === true && { tokenSignal: true }),
    };
    return new Promise<R>((resolve, reject) =>
      this.#start(request, counting, resolve, reject),
    ).then(
      (response) => {
        end({ status: exchange.status(response) }, attempts);
        return response;
      },
      (error: unknown) => {
        const code = errorCode(error);
        end(code === undefined ? {} : { code }, attempts);
        throw error;
      },
    );
  }

  /**
   * Attempt 1, optimistic: admitted synchronously (the common case), sent,
   * and a response below 400 handed back from the transport's own callback,
   * without entering the retry loop (no async frame, no promise of its own,
   * no closures beyond the attempt's). Anything else (an admission that
   * waits, a failure, a status of 400 or more) goes on in {@link #loop},
   * which does exactly what it would have done from the start. Calls
   * exactly one of `resolve` and `reject`, once.
   */
  #start<R>(
    request: LogicalRequest,
    exchange: Exchange<R>,
    resolve: (response: R) => void,
    reject: (error: unknown) => void,
  ): void {
    const flight = this.#open(request, exchange);
    if (!(flight instanceof Flight)) {
      flight.then(resolve, reject);
      return;
    }
    this.#send(flight, flight.started, (outcome) => {
      let lesson: Lesson | undefined;
      let response: R;
      try {
        lesson = this.#learn(flight, outcome, flight.gate, flight.started);
        if (lesson === undefined) response = this.#handOver(flight, outcome);
      } catch (error) {
        reject(error);
        return;
      }
      if (lesson === undefined) resolve(response!);
      else this.#loop(flight, undefined, { outcome, lesson }).then(resolve, reject);
    });
  }

  /**
   * Admits attempt 1: the flight, with its gate and start time, when it may
   * leave at once; otherwise the request's own end (an admission that waits
   * continues in {@link #loop}; a refusal, an abort or no time left rejects).
   */
  #open<R>(request: LogicalRequest, exchange: Exchange<R>, key?: string): Flight<R> | Promise<R> {
    const policies = this.#policies;
    let flight: Flight<R>;
    let gate: Gate | Promise<Gate> = OPEN_GATE;
    try {
      request.signal?.throwIfAborted();
      // One clock read for the whole synchronous admission: nothing in it waits.
      const now = this.#clock.now();
      flight = new Flight(request, exchange, this.#clock, this.#on, policies, now, key);
      if (policies !== undefined) {
        // A quiet key: the ledger counts what the policies would only have counted (ledger.ts).
        const ledgers = policies.ledgers;
        const quiet = ledgers?.send(flight.key, now);
        if (quiet !== undefined) gate = quiet;
        else {
          if (policies.budget !== undefined) deposit(policies.budget, flight.key, now);
          gate = admit(flight, policies, now);
          if (isPromiseLike(gate)) return this.#loop(flight, gate, undefined);
          ledgers?.arm(flight.key, gate, now);
        }
      }
      flight.started = this.#begin(flight, gate, now);
    } catch (error) {
      return Promise.reject(error);
    }
    flight.gate = gate;
    return flight;
  }

  /**
   * The retry loop. Entered for attempt 1 whose admission must wait
   * (`admitting`), or after attempt 1 failed (`failed`: its outcome and what
   * it taught); every later attempt runs here.
   */
  async #loop<R>(
    flight: Flight<R>,
    admitting: Promise<Gate> | undefined,
    failed: { outcome: Outcome<R>; lesson: Lesson } | undefined,
  ): Promise<R> {
    const policies = this.#policies;
    if (failed !== undefined) {
      const next = await this.#next(flight, failed.outcome, failed.lesson);
      if (next !== undefined) return next.response;
      flight.attempt++;
    }
    for (; ; flight.attempt++) {
      let gate = OPEN_GATE;
      if (admitting !== undefined) {
        gate = await admitting;
        admitting = undefined;
      } else if (policies !== undefined) {
        const admitted = admit(flight, policies);
        gate = isPromiseLike(admitted) ? await admitted : admitted;
      }
      const started = this.#begin(flight, gate);
      const outcome = await new Promise<Outcome<R>>((resolve) =>
        this.#send(flight, started, resolve),
      );
      const lesson = this.#learn(flight, outcome, gate, started);
      if (lesson === undefined) return this.#handOver(flight, outcome);
      const next = await this.#next(flight, outcome, lesson);
      if (next !== undefined) return next.response;
    }
  }

  /**
   * An admitted attempt is about to leave: checks the deadline, says the
   * retry it is (if it is one) and `attemptStart`. Returns its start time.
   */
  #begin(flight: Flight<unknown>, gate: Gate, started: number = this.#clock.now()): number {
    const { request, attempt } = flight;
    if (flight.deadline - started <= 0) {
      gate.release();
      throw this.#giveUpOnDeadline(request, flight.url(), attempt - 1);
    }
    const pending = flight.pending;
    if (pending !== undefined) {
      // The real time from the failure to this attempt: backoff, pacing and every policy wait.
      emit(this.#on.retry, { ...pending.event, delay: started - pending.failedAt });
      flight.pending = undefined;
    }
    if (this.#on.attemptStart !== undefined) {
      emit(this.#on.attemptStart, { method: request.method, url: flight.url(), attempt });
    }
    return started;
  }

  /**
   * Learns from an attempt's outcome: releases its gate, says `attempt`,
   * tells the policies. `undefined`: a response to hand back. Throws when
   * the request ends here (the caller aborted, the total deadline passed).
   */
  #learn<R>(
    flight: Flight<R>,
    outcome: Outcome<R>,
    gate: Gate,
    started: number,
  ): Lesson | undefined {
    return this.#learnFrom(
      flight,
      outcome.ok,
      outcome.ok ? outcome.response : outcome.error,
      gate,
      started,
    );
  }

  /**
   * {@link #learn} from what the outcome held: a response (`ok`), or the
   * error. An adapter's attempt 1 that succeeded comes here without an
   * outcome object ({@link firstSucceeded}).
   */
  #learnFrom<R>(
    flight: Flight<R>,
    ok: boolean,
    value: unknown,
    gate: Gate,
    started: number,
  ): Lesson | undefined {
    const policies = this.#policies;
    const { request, exchange, key, attempt } = flight;
    gate.release();
    const done = this.#clock.now();
    if (ok) {
      const response = value as R;
      const status = exchange.status(response);
      const headers = exchange.headers(response);
      let refined: ReturnType<typeof refineStatus> | undefined;
      if (status >= 400) {
        const table = classifyStatus(status, headers, request.retry.statuses);
        refined = refineStatus(this.#classify, {
          method: request.method,
          url: request.url,
          status,
          headers,
          scope: table,
        });
      }
      const kind = refined?.kind;
      if (this.#on.attempt !== undefined) {
        emit(this.#on.attempt, {
          method: request.method,
          url: flight.url(),
          attempt,
          status,
          ...(kind !== undefined && { kind }),
          duration: done - started,
        });
      }
      const pacing = this.#pacing(headers, status, done, policies?.limiter !== undefined);
      if (policies !== undefined) {
        this.#tellSuccess(policies, key, gate, status, pacing, refined, started, done);
      }
      if (refined === undefined) return undefined;
      return {
        verdict: { scope: refined.scope, reason: 'status', stale: false },
        status,
        code: undefined,
        kind,
        pacing,
        done,
      };
    }
    const error = value;
    const { signal } = request;
    const aborted = signal?.aborted === true;
    // The stale keep-alive race (classify.ts, STALE_CONNECTION): resent at once, no backoff,
    // no budget, not a breaker failure. Only a transport can tell; see staunch/undici.
    const stale = !aborted && isStaleConnection(error);
    if (policies !== undefined)
      feedback(
        policies,
        key,
        gate,
        { error, sentAt: started, notTheUpstream: aborted || stale },
        done,
      );
    if (aborted) throw signal!.reason;
    flight.lastError = error;
    const code = errorCode(error);
    if (this.#on.attempt !== undefined) {
      emit(this.#on.attempt, {
        method: request.method,
        url: flight.url(),
        attempt,
        ...(code !== undefined && { code }),
        duration: done - started,
      });
    }
    if (error instanceof DeadlineExceededError && error.timeout === 'total') {
      throw this.#giveUpOnDeadline(request, flight.url(), attempt, error);
    }
    return {
      verdict: errorVerdict(error, stale),
      status: undefined,
      code,
      kind: undefined,
      pacing: undefined,
      done,
    };
  }

  /** Tells the policies of a response: counted by the quiet ledger (policy/ledger.ts), or told one by one. */
  #tellSuccess(
    policies: Policies,
    key: string,
    gate: Gate,
    status: number,
    pacing: ServerPacing | undefined,
    refined: unknown,
    started: number,
    done: number,
  ): void {
    const plain =
      refined === undefined &&
      (pacing === undefined || (pacing.remaining === undefined && pacing.rate === undefined));
    const counted =
      plain &&
      (gate as Partial<LedgerGate>).ledger !== undefined &&
      policies.ledgers!.succeeded(gate as LedgerGate, done);
    if (!counted) feedback(policies, key, gate, { status, pacing, sentAt: started, plain }, done);
  }

  /**
   * Decides after an attempt that was not handed back: a result (`{ response }`,
   * or a throw) ends the request; `undefined` means the next attempt may go
   * (its backoff slept, its budget taken).
   */
  async #next<R>(
    flight: Flight<R>,
    outcome: Outcome<R>,
    lesson: Lesson,
  ): Promise<{ response: R } | undefined> {
    const policies = this.#policies;
    const { request, exchange, key, attempt, deadline } = flight;
    const { retry, signal } = request;
    const { verdict, status, code, kind, pacing, done } = lesson;
    const finish = (why: GiveUpReason | undefined, delay?: number): { response: R } => {
      if (why !== undefined) {
        sayGiveUp(this.#on, request, {
          method: request.method,
          url: flight.url(),
          attempts: attempt,
          reason: why,
          ...(status !== undefined && { status }),
          ...(code !== undefined && { code }),
          ...(kind !== undefined && { kind }),
          ...(delay !== undefined && { delay }),
        });
      }
      if (outcome.ok) return { response: this.#handOver(flight, outcome) };
      throw this.#failure(request, flight.url(), outcome.error, attempt);
    };

    const previousDelay = flight.previousDelay;
    const decision = decide(verdict, {
      replayable: request.replayable,
      resendable: () => exchange.resendable(verdict.reason === 'unsent'),
      attempt,
      attempts: retry.attempts,
      timeLeft: deadline - done,
      hint: pacing?.delay,
      hintSource: pacing?.source,
      maxRetryAfter: retry.maxRetryAfter,
      backoff: () => retry.backoff(attempt, previousDelay, this.#random),
      random: this.#random,
    });
    if (decision.action === 'done') return finish(undefined);
    if (decision.action === 'give-up') return finish(decision.reason, decision.delay);
    const { delay, source } = decision;

    // A retry of a failure spends the key's budget. Not charged: the stale race; a retry
    // after a 429, which is pacing that the rate limiter bounds; and a retry that will meet
    // an open circuit, which waits for the probe's verdict and adds no load until then.
    if (
      decision.charged &&
      policies?.budget !== undefined &&
      !(status === 429 && policies.limiter !== undefined) &&
      !(policies.breaker?.refusing(key) ?? false)
    ) {
      const granted = await this.#withdraw(policies, flight, deadline - delay);
      if (!granted) return finish('budget');
    }

    flight.pending = {
      failedAt: done,
      event: {
        method: request.method,
        url: flight.url(),
        attempt,
        delay,
        delaySource: source,
        reason: verdict.reason,
        ...(status !== undefined && { status }),
        ...(code !== undefined && { code }),
        ...(kind !== undefined && { kind }),
      },
    };
    if (!verdict.stale) flight.previousDelay = delay;
    const reason: WaitReason = source === 'backoff' ? 'backoff' : 'server';
    const wait = this.#sleep(delay, signal, reason, flight, attempt + 1);
    if (outcome.ok) {
      outcome.unlink();
      const drained = exchange.discard(outcome.response, wait).catch(noop);
      await wait;
      await drained;
    } else {
      await wait;
    }
    return undefined;
  }

  /**
   * Takes a retry from the budget; when it holds none, waits for its floor to
   * refill one, as long as the retry (and its `delay` after) still fits
   * before `latest`: the budget bounds the rate of retries, it does not drop
   * them. A circuit that opens meanwhile ends the wait uncharged (the retry
   * then waits for the probe's verdict and adds no load). `false`: no time.
   */
  async #withdraw(policies: Policies, flight: Flight<unknown>, latest: number): Promise<boolean> {
    const { key, request, attempt } = flight;
    const budget = policies.budget!;
    policies.ledgers?.settle(key, true);
    if (await budget.tryWithdraw(key).catch(() => true)) return true;
    const step = Math.max(50, budget.refillMs);
    const since = this.#clock.now();
    for (;;) {
      if (this.#clock.now() + step >= latest) return false;
      await this.#sleep(step, request.signal, 'budget', flight, attempt + 1, false);
      policies.ledgers?.settle(key, true);
      if (policies.breaker?.refusing(key) || (await budget.tryWithdraw(key).catch(() => true))) {
        const listener = this.#on.wait;
        if (listener !== undefined) {
          const duration = this.#clock.now() - since;
          emit(listener, {
            method: request.method,
            url: flight.url(),
            attempt: attempt + 1,
            reason: 'budget',
            duration,
          });
        }
        return true;
      }
    }
  }

  /**
   * A backoff or pacing sleep, under the caller's signal through the shared
   * link (one listener per parent signal, however many requests sleep on it),
   * then said as a `wait` event.
   */
  async #sleep(
    ms: number,
    signal: AbortSignal | undefined,
    reason: WaitReason,
    flight: Flight<unknown>,
    attempt: number,
    say = true,
  ): Promise<void> {
    if (ms <= 0) return;
    const since = this.#clock.now();
    if (signal === undefined) await this.#clock.sleep(ms);
    else {
      const controller = new AbortController();
      const unlink = linkSignal(signal, (why) => controller.abort(why));
      try {
        await this.#clock.sleep(ms, controller.signal);
      } finally {
        unlink();
      }
    }
    const listener = this.#on.wait;
    if (listener !== undefined && say) {
      emit(listener, {
        method: flight.request.method,
        url: flight.url(),
        attempt,
        reason,
        duration: this.#clock.now() - since,
      });
    }
  }

  /**
   * Sends the flight's current attempt, raced against its deadline and the
   * caller's signal: `settled` is called once, as soon as either aborts, even
   * if the transport ignores its signal. Every abort goes through `abort`
   * below, so the race needs no listener on the signal. A response that
   * arrives after the abort is released.
   */
  #send<R>(flight: Flight<R>, started: number, settled: (outcome: Outcome<R>) => void): void {
    const { request, exchange, attempt } = flight;
    const remaining = flight.deadline - started;
    const { timeout } = request;
    const scope: DeadlineScope = timeout.attempt < remaining ? 'attempt' : 'total';
    const limit = Math.min(timeout.attempt, remaining);
    // A token when the transport reads its signal only as staunch's own code does (token.ts).
    const controller = exchange.tokenSignal === true ? new AbortToken() : new AbortController();
    // `finish` is dropped once the attempt settles: the caller's signal may
    // stay linked to `abort` while the body is read, and must not keep the
    // outcome (and so the response) reachable through it.
    let finish: ((outcome: Outcome<R>) => void) | undefined = settled;
    let deadline: Deadline | undefined;
    let unlink = noop;
    const settle = (outcome: Outcome<R>): boolean => {
      const f = finish;
      if (f === undefined) return false;
      finish = undefined;
      deadline?.cancel();
      f(outcome);
      return true;
    };
    // After a response was handed back, the caller's abort still reaches the
    // controller (it cancels the body); it no longer settles anything.
    const abort = (reason: unknown): void => {
      controller.abort(reason);
      if (finish !== undefined) {
        unlink();
        settle({ ok: false, error: reason });
      }
    };
    const caller = request.signal;
    if (caller !== undefined) unlink = linkSignal(caller, abort);
    if (Number.isFinite(limit)) {
      const start = exchange.steadyDeadlines === true ? startSteadyDeadline : startDeadline;
      deadline = start(this.#clock, limit, () =>
        abort(this.#deadline(request, flight.url(), scope, attempt)),
      );
    }
    const ok = (response: R): void => {
      if (!settle({ ok: true, response, unlink })) {
        void exchange.discard(response, Promise.resolve()).catch(noop);
      }
    };
    const fail = (error: unknown): void => {
      if (finish === undefined) return;
      unlink();
      settle({ ok: false, error });
    };
    if (exchange.sendWith !== undefined) {
      try {
        exchange.sendWith(controller.signal, attempt, ok, fail);
      } catch (error) {
        fail(error);
      }
      return;
    }
    let sent: Promise<R>;
    try {
      sent = exchange.send(controller.signal, attempt);
    } catch (error) {
      sent = Promise.reject(error);
    }
    sent.then(ok, fail);
  }

  #giveUpOnDeadline(
    request: LogicalRequest,
    url: string,
    attempts: number,
    error: DeadlineExceededError = this.#deadline(request, url, 'total', attempts),
  ): DeadlineExceededError {
    sayGiveUp(this.#on, request, { method: request.method, url, attempts, reason: 'deadline' });
    return error;
  }

  /** The response goes back to the caller; the caller's signal stays linked as the adapter says. */
  #handOver<R>(flight: Flight<R>, outcome: Outcome<R>): R {
    const { response, unlink } = outcome as Extract<Outcome<R>, { ok: true }>;
    if (flight.request.signal !== undefined) {
      const { exchange } = flight;
      if (exchange.handOver) exchange.handOver(response, unlink);
      else unlink();
    }
    return response;
  }

  #deadline(
    request: LogicalRequest,
    url: string,
    scope: DeadlineScope,
    attempts: number,
    ms = scope === 'total' ? request.timeout.total : request.timeout.attempt,
  ): DeadlineExceededError {
    const what = scope === 'attempt' ? `attempt ${attempts}` : 'request';
    return new DeadlineExceededError(
      `${request.method} ${url}: ${what} exceeded timeout.${scope} (${ms} ms)`,
      scope,
      ms,
      { method: request.method, url, attempts },
    );
  }

  #failure(request: LogicalRequest, url: string, error: unknown, attempts: number): Error {
    const context: StaunchErrorOptions = { method: request.method, url, attempts, cause: error };
    if (error instanceof DeadlineExceededError) return error;
    scrubError(error, request.secrets());
    if (isInvalidRequest(error)) return error as Error; // the caller's mistake, as the runtime made it
    const kind = classifyError(error);
    const code = errorCode(error);
    const maybeSent = kind === 'maybe-sent';
    const detail = code ?? (error instanceof Error ? error.message : String(error));
    const times = attempts === 1 ? '1 attempt' : `${attempts} attempts`;
    return new NetworkError(
      `${request.method} ${url} failed after ${times}: ${detail}${maybeSent ? ' (the request may have been sent)' : ''}`,
      maybeSent,
      context,
    );
  }
}
