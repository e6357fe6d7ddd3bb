/**
 * One logical request on its way: what its attempts share, in one object that
 * is also the policies' admission context and an adapter's ticket for
 * attempt 1. Its end is said here, once: `giveUp` if it gave up, then `end`.
 */
import {
  DeadlineExceededError,
  type DeadlineScope,
  deadlineExceeded,
  IdempotencyKeyMismatchError,
  networkFailure,
  type StaunchErrorOptions,
} from '../errors.js';
import {
  defined,
  emit,
  type GiveUpEvent,
  type GiveUpReason,
  type StaunchListeners,
  type WaitReason,
} from '../events.js';
import { type Clock, noop } from '../internal/clock.js';
import { redactUrl, scrubbedCause, scrubError } from '../internal/redact.js';
import { type AdmitContext, type Gate, OPEN_GATE } from '../policy/gate.js';
import type { Exchange, FirstTicket, LogicalRequest, Outcome } from '../request.js';
import { classifyError, errorCode, isInvalidRequest, replayedBy } from '../retry/classify.js';
import type { Failure } from './types.js';

/** One attempt's own state, kept while several are in flight (policy/hedge/round.ts). */
export interface AttemptState {
  readonly attempt: number;
  readonly gate: Gate;
  readonly started: number;
  readonly limit: number;
  readonly scope: DeadlineScope;
  readonly hedge: boolean;
}

export class Flight<R> implements AdmitContext, FirstTicket {
  /** Clock times the request began, and its total deadline expires. */
  readonly began: number;
  readonly deadline: number;
  /** The attempt being admitted or sent; `sent`: the last that left. */
  attempt = 1;
  sent = 0;
  /** The backoff's own previous delay: a server's hint is none, it paces only its own retry. */
  previousDelay = 0;
  lastError: unknown;
  /** The attempt under way: its gate, start, deadline (`limit` ms, of `scope`). */
  gate: Gate = OPEN_GATE;
  started = 0;
  limit: number = Number.POSITIVE_INFINITY;
  scope: DeadlineScope = 'total';
  /** The attempt under way is a hedge (policy/hedge/round.ts). */
  hedge = false;
  /** Hedges sent; the attempt whose response ended the last hedged round, if one did. */
  hedges = 0;
  won: number | undefined;
  #giveUp: GiveUpEvent | undefined;
  #url: string | undefined;

  constructor(
    readonly request: LogicalRequest,
    readonly exchange: Exchange<R>,
    readonly clock: Clock,
    readonly on: StaunchListeners,
    readonly key: string,
  ) {
    this.began = clock.now();
    this.deadline = this.began + request.timeout.total;
  }

  url(): string {
    this.#url ??= redactUrl(this.request.url);
    return this.#url;
  }

  /**
   * The admitted attempt leaves at `now` with `gate`, if the total deadline
   * has not passed: its own deadline is `timeout.attempt` or what is left.
   */
  leave(gate: Gate, now: number, hedge = false): void {
    const remaining = this.deadline - now;
    if (remaining <= 0) {
      gate.release();
      this.giveUp('deadline', this.attempt - 1);
      throw this.expired('total', this.attempt - 1);
    }
    const { attempt } = this.request.timeout;
    this.gate = gate;
    this.started = now;
    this.sent = this.attempt;
    this.scope = attempt < remaining ? 'attempt' : 'total';
    this.limit = Math.min(attempt, remaining);
    this.hedge = hedge;
    if (hedge) this.hedges++;
    if (this.on.attemptStart === undefined) return;
    const { method } = this.request;
    const event = { method, url: this.url(), attempt: this.sent };
    emit(this.on.attemptStart, hedge ? { ...event, hedge } : event);
  }

  /** The attempt under way's own state, to {@link resume} it later. */
  current(): AttemptState {
    const { attempt, gate, started, limit, scope, hedge } = this;
    return { attempt, gate, started, limit, scope, hedge };
  }

  /** Makes `state`'s attempt the one under way again (its outcome is learnt next). */
  resume(state: AttemptState): void {
    this.attempt = state.attempt;
    this.gate = state.gate;
    this.started = state.started;
    this.limit = state.limit;
    this.scope = state.scope;
    this.hedge = state.hedge;
  }

  /** The error that ends the attempt under way at its `limit` (or the request, `total`). */
  expired(
    scope: DeadlineScope = this.scope,
    attempts: number = this.attempt,
  ): DeadlineExceededError {
    const { method, timeout } = this.request;
    return deadlineExceeded(method, this.url(), scope, timeout[scope], attempts);
  }

  /** The request gives up after `attempts` for `reason`: said at its end. */
  giveUp(reason: GiveUpReason, attempts: number, why?: Partial<GiveUpEvent>): void {
    this.#giveUp = { ...why, method: this.request.method, url: this.url(), attempts, reason };
  }

  /** A policy refused the attempt: `giveUp`, then its error (the previous failure its cause). */
  refusal(reason: GiveUpReason, make: (context: StaunchErrorOptions) => Error): Error {
    const { request, attempt, lastError } = this;
    this.giveUp(reason, attempt - 1);
    return make({
      method: request.method,
      url: this.url(),
      attempts: attempt - 1,
      ...(lastError !== undefined && { cause: scrubbedCause(lastError, request.secrets()) }),
    });
  }

  onWait(reason: WaitReason, duration: number, attempt: number = this.attempt): void {
    if (this.on.wait === undefined) return;
    emit(this.on.wait, { method: this.request.method, url: this.url(), attempt, reason, duration });
  }

  /** The retrying stops at `failed` (`reason`: it gave up): its response back, or its error. */
  stop({ outcome, lesson }: Failure<R>, reason?: GiveUpReason, delay?: number): R {
    if (reason !== undefined) {
      const { status, code, kind } = lesson;
      this.giveUp(reason, this.attempt, defined({ status, code, kind, delay }));
    }
    if (outcome.ok) return this.handOver(outcome);
    throw this.failure(outcome.error);
  }

  /** A keyed 422 ends the request as an error: its response is released, never handed back. */
  mismatch(outcome: Outcome<R>): IdempotencyKeyMismatchError {
    if (outcome.ok) {
      outcome.unlink();
      this.exchange.discard(outcome.response, Promise.resolve()).catch(noop);
    }
    const { method } = this.request;
    const message = `${method} ${this.url()}: 422, the idempotency key was used before with another payload; a new payload needs a new key`;
    return new IdempotencyKeyMismatchError(message, {
      method,
      url: this.url(),
      attempts: this.attempt,
    });
  }

  /** The response goes back to the caller; the caller's signal stays linked as the adapter says. */
  handOver({ response, unlink }: Extract<Outcome<R>, { ok: true }>): R {
    if (this.request.signal !== undefined) {
      if (this.exchange.handOver) this.exchange.handOver(response, unlink);
      else unlink();
    }
    return this.done(response);
  }

  /** The request ends with `response` (handed back by the adapter or {@link handOver}). */
  done(response: R): R {
    const status = this.exchange.status(response);
    // Read only for a listener: a response's headers are not scanned for nothing.
    const replayed =
      this.on.end === undefined ? undefined : replayedBy(this.exchange.headers(response));
    this.#end(replayed === undefined ? { status } : { status, replayed });
    return response;
  }

  /** The request ends with `error`, thrown to the caller. */
  failed(error: unknown): unknown {
    this.#end(defined({ code: errorCode(error) }));
    return error;
  }

  #end(how: { status?: number; code?: string; replayed?: true }): void {
    const { on, request } = this;
    const giveUp = this.#giveUp;
    if (giveUp !== undefined && on.giveUp !== undefined) {
      // How to send it again, non-enumerable: a log that prints the event does not copy the body.
      const replay = request.replayable ? request.replay?.() : undefined;
      if (replay !== undefined) Object.defineProperty(giveUp, 'replay', { value: replay });
      emit(on.giveUp, giveUp);
    }
    if (on.end === undefined) return;
    const duration = this.clock.now() - this.began;
    // The attempt whose response is handed back: a hedged round's, or the attempt under way.
    const won = how.status === undefined ? undefined : (this.won ?? this.attempt);
    const hedged = this.hedges > 0 ? { hedges: this.hedges, won } : undefined;
    emit(on.end, {
      method: request.method,
      url: this.url(),
      attempts: this.sent,
      ...how,
      ...(hedged && defined(hedged)),
      duration,
    });
  }

  /** What the caller is thrown for a failure without a response: a `NetworkError`, scrubbed. */
  failure(error: unknown): unknown {
    if (error instanceof DeadlineExceededError) return error;
    scrubError(error, this.request.secrets());
    if (isInvalidRequest(error)) return error; // the caller's mistake, as the runtime made it
    const detail = errorCode(error) ?? (error instanceof Error ? error.message : String(error));
    const maybeSent = classifyError(error) === 'maybe-sent';
    return networkFailure(this.request.method, this.url(), this.attempt, error, detail, maybeSent);
  }
}
