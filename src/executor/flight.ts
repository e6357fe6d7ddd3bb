/**
 * One logical request on its way: what every attempt shares (key, deadline,
 * the redacted URL, the backoff's previous delay) in one object, which is
 * also the policies' admission context (no allocation to admit) and the
 * ticket of an adapter's own attempt 1. Its end is said here, once:
 * `giveUp` if it gave up, then `end`.
 */
import {
  DeadlineExceededError,
  type DeadlineScope,
  deadlineExceeded,
  networkFailure,
  type StaunchErrorOptions,
} from '../errors.js';
import {
  emit,
  type GiveUpEvent,
  type GiveUpReason,
  type StaunchListeners,
  type WaitReason,
} from '../events.js';
import type { Clock } from '../internal/clock.js';
import { redactUrl, scrubbedCause, scrubError } from '../internal/redact.js';
import { type AdmitContext, type Gate, OPEN_GATE } from '../policy/gate.js';
import type { Exchange, LogicalRequest } from '../request.js';
import { classifyError, errorCode, isInvalidRequest } from '../retry/classify.js';
import type { Failure, FirstTicket, Outcome } from './types.js';

export class Flight<R> implements AdmitContext, FirstTicket {
  readonly request: LogicalRequest;
  readonly exchange: Exchange<R>;
  readonly clock: Clock;
  readonly on: StaunchListeners;
  readonly key: string;
  /** Clock time the request began, and its total deadline expires. */
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
  limit = Number.POSITIVE_INFINITY;
  scope: DeadlineScope = 'total';
  #giveUp: GiveUpEvent | undefined;
  #redacted: string | undefined;

  constructor(
    request: LogicalRequest,
    exchange: Exchange<R>,
    clock: Clock,
    on: StaunchListeners,
    key: string,
  ) {
    this.request = request;
    this.exchange = exchange;
    this.clock = clock;
    this.on = on;
    this.key = key;
    this.began = clock.now();
    this.deadline = this.began + request.timeout.total;
  }

  url(): string {
    this.#redacted ??= redactUrl(this.request.url);
    return this.#redacted;
  }

  /** The attempt leaves at `now` with `gate`: its deadline is its own, or what is left of the total. */
  leave(gate: Gate, now: number): void {
    const remaining = this.deadline - now;
    const { attempt } = this.request.timeout;
    this.gate = gate;
    this.started = now;
    this.sent = this.attempt;
    this.scope = attempt < remaining ? 'attempt' : 'total';
    this.limit = Math.min(attempt, remaining);
  }

  /** The error that ends the attempt under way at its `limit`. */
  expired(): DeadlineExceededError {
    const { method, timeout } = this.request;
    const ms = this.scope === 'total' ? timeout.total : timeout.attempt;
    return deadlineExceeded(method, this.url(), this.scope, ms, this.attempt);
  }

  /** The total deadline passed after `attempts`: `giveUp`, and its error. */
  outOfTime(attempts: number): DeadlineExceededError {
    this.giveUp('deadline', attempts);
    const { method, timeout } = this.request;
    return deadlineExceeded(method, this.url(), 'total', timeout.total, attempts);
  }

  /** The request gives up after `attempts` for `reason`: said at its end. */
  giveUp(reason: GiveUpReason, attempts: number, why?: Partial<GiveUpEvent>): void {
    const { method } = this.request;
    this.#giveUp = { ...why, method, url: this.url(), attempts, reason };
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

  onWait(reason: WaitReason, duration: number, attempt = this.attempt): void {
    const listener = this.on.wait;
    if (listener === undefined) return;
    emit(listener, { method: this.request.method, url: this.url(), attempt, reason, duration });
  }

  /** The retry stops at `failed` (`reason`: it gave up, said): its response back, or its error. */
  stop(failed: Failure<R>, reason?: GiveUpReason, delay?: number): R {
    const { outcome, lesson } = failed;
    if (reason !== undefined) {
      const { status, code, kind } = lesson;
      this.giveUp(reason, this.attempt, {
        ...(status !== undefined && { status }),
        ...(code !== undefined && { code }),
        ...(kind !== undefined && { kind }),
        ...(delay !== undefined && { delay }),
      });
    }
    if (outcome.ok) return this.handOver(outcome);
    throw this.failure(outcome.error);
  }

  /** The response goes back to the caller; the caller's signal stays linked as the adapter says. */
  handOver(outcome: Extract<Outcome<R>, { ok: true }>): R {
    const { response, unlink } = outcome;
    if (this.request.signal !== undefined) {
      const { exchange } = this;
      if (exchange.handOver) exchange.handOver(response, unlink);
      else unlink();
    }
    return this.done(response);
  }

  /** The request ends with `response` (handed back by the adapter or {@link handOver}). */
  done(response: R): R {
    this.#end(this.exchange.status(response), undefined);
    return response;
  }

  /** The request ends with `error`, thrown to the caller. */
  failed(error: unknown): unknown {
    this.#end(undefined, errorCode(error));
    return error;
  }

  #end(status: number | undefined, code: string | undefined): void {
    const { on, request } = this;
    const giveUp = this.#giveUp;
    if (giveUp !== undefined && on.giveUp !== undefined) {
      // A replayable request's event carries how to send it again; non-enumerable, so a
      // log that prints the event does not copy the body.
      const replay = request.replayable ? request.replay?.() : undefined;
      if (replay !== undefined) Object.defineProperty(giveUp, 'replay', { value: replay });
      emit(on.giveUp, giveUp);
    }
    if (on.end === undefined) return;
    emit(on.end, {
      method: request.method,
      url: this.url(),
      attempts: this.sent,
      ...(status !== undefined && { status }),
      ...(code !== undefined && { code }),
      duration: this.clock.now() - this.began,
    });
  }

  /** What the caller is thrown for a failure without a response: a `NetworkError`, scrubbed. */
  failure(error: unknown): unknown {
    const { request } = this;
    if (error instanceof DeadlineExceededError) return error;
    scrubError(error, request.secrets());
    if (isInvalidRequest(error)) return error; // the caller's mistake, as the runtime made it
    const detail = errorCode(error) ?? (error instanceof Error ? error.message : String(error));
    const maybeSent = classifyError(error) === 'maybe-sent';
    return networkFailure(request.method, this.url(), this.attempt, error, detail, maybeSent);
  }
}
