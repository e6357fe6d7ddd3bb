/**
 * One logical request on its way: what its attempts share, in one object that
 * is also the policies' admission context, its own attempt under way (a hedge
 * is one of its own) and an adapter's ticket for attempt 1. How each attempt
 * ended is said here, and the request's end, once: `giveUp` if it gave up, then `end`.
 * With the executor's settings it reads (`Setup`) and a failed attempt (`Failure`).
 */
import {
  type DeadlineExceededError,
  type DeadlineScope,
  deadlineExceeded,
  idempotencyKeyMismatch,
} from '../errors.js';
import {
  type AttemptEvent,
  defined,
  emit,
  type GiveUpEvent,
  type GiveUpReason,
  type WaitReason,
} from '../events.js';
import { type Clock, noop } from '../internal/clock.js';
import { redactUrl } from '../internal/redact.js';
import type { ExecutorOptions } from '../options.js';
import { type AdmitContext, type Gate, OPEN_GATE, type Sent } from '../policy/gate.js';
import type { LatencyTracker } from '../policy/hedge/latency.js';
import type { Exchange, FirstTicket, LogicalRequest, Outcome } from '../request.js';
import { errorCode, replayedBy, thrownFor } from '../retry/classify.js';
import type { Lesson, RetryContext } from '../retry/decide.js';
import type { ResponsePacing } from '../retry/server-delay.js';

/** The executor's settings as its parts read them (`policies`: none when all are off). */
export interface Setup extends Readonly<Omit<ExecutorOptions, 'pacing'>> {
  readonly pacing: ResponsePacing;
  /** Time to headers of successes per key, for `hedge.delay: 'auto'`. */
  readonly latency: LatencyTracker;
}

/** An attempt that failed, or answered a status the retry table reads. */
export interface Failure<R> {
  readonly outcome: Outcome<R>;
  readonly lesson: Lesson;
}

type Fields<E> = { [K in keyof E]?: E[K] | undefined };

export class Flight<R> implements AdmitContext, RetryContext, FirstTicket, Sent {
  /** The policy key: the adapter's, else what the `key` option says ('' without policies). */
  readonly key: string;
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
  /** Hedges sent (policy/hedge/round.ts); the attempt whose response ended the last round. */
  hedges = 0;
  won: number | undefined;
  #giveUp: GiveUpEvent | undefined;
  #url: string | undefined;

  constructor(
    /** The executor's settings, which its parts read through the flight. */
    readonly setup: Setup,
    readonly request: LogicalRequest,
    readonly exchange: Exchange<R>,
    key?: string,
    began: number = setup.clock.now(),
  ) {
    this.key = key ?? setup.policies?.key(request) ?? '';
    this.began = began;
    this.deadline = this.began + request.timeout.total;
  }

  get clock(): Clock {
    return this.setup.clock;
  }

  url(): string {
    this.#url ??= redactUrl(this.request.url);
    return this.#url;
  }

  /**
   * The admitted attempt leaves at `now` with `gate`, if the total deadline
   * has not passed: its own deadline is `timeout.attempt` or what is left.
   * A hedge leaves beside the attempt under way, as the next attempt: returned.
   */
  leave(gate: Gate, now: number, hedge?: true): Sent {
    const remaining = this.deadline - now;
    if (remaining <= 0) {
      gate.release();
      this.giveUp('deadline', this.attempt - 1);
      throw this.expired({ scope: 'total', attempt: this.attempt - 1 });
    }
    const { timeout } = this.request;
    const scope = timeout.attempt < remaining ? 'attempt' : 'total';
    const limit = Math.min(timeout.attempt, remaining);
    let sent: Sent = this;
    if (hedge) {
      sent = { attempt: this.sent + 1, gate, started: now, limit, scope, hedge };
      this.hedges++;
    } else {
      this.gate = gate;
      this.started = now;
      this.limit = limit;
      this.scope = scope;
    }
    this.sent = sent.attempt;
    const { on } = this.setup;
    if (on.attemptStart === undefined) return sent;
    const event = { method: this.request.method, url: this.url(), attempt: this.sent };
    emit(on.attemptStart, hedge ? { ...event, hedge } : event);
    return sent;
  }

  /** Says `attempt`: how `sent` ended, at `done`. */
  onAttempt(sent: Sent, done: number, how: Fields<AttemptEvent>): void {
    const listener = this.setup.on.attempt;
    if (listener === undefined) return;
    const { attempt, hedge } = sent;
    emit(listener, {
      method: this.request.method,
      url: this.url(),
      attempt,
      ...defined(how),
      ...(hedge && { hedge }),
      duration: done - sent.started,
    });
  }

  /** The error that ends `sent` at its `limit` (or the request, its scope `total`). */
  expired({ scope, attempt }: Pick<Sent, 'scope' | 'attempt'> = this): DeadlineExceededError {
    const { method, timeout } = this.request;
    return deadlineExceeded(method, this.url(), scope, timeout[scope], attempt);
  }

  /** The request gives up after `attempts` for `reason`: said at its end. */
  giveUp(reason: GiveUpReason, attempts: number, why?: Partial<GiveUpEvent>): void {
    this.#giveUp = { ...why, method: this.request.method, url: this.url(), attempts, reason };
  }

  onWait(reason: WaitReason, duration: number, attempt: number = this.attempt): void {
    const listener = this.setup.on.wait;
    if (listener === undefined) return;
    emit(listener, { method: this.request.method, url: this.url(), attempt, reason, duration });
  }

  /**
   * The retrying stops at `failed` (`reason`: it gave up): its response back,
   * or its error. A keyed 422 may be thrown instead (`mismatch: 'throw'`), its response released.
   */
  stop({ outcome, lesson }: Failure<R>, reason?: GiveUpReason, delay?: number): R {
    const { status, code, kind } = lesson;
    if (reason !== undefined) {
      this.giveUp(reason, this.attempt, defined({ status, code, kind, delay }));
    } else if (lesson.mismatch === true && this.setup.mismatch === 'throw') {
      if (outcome.ok) this.release(outcome);
      throw idempotencyKeyMismatch(this.request.method, this.url(), this.attempt);
    }
    if (outcome.ok) return this.handOver(outcome);
    throw thrownFor(outcome.error, this.request, this.url(), this.attempt);
  }

  /** A response that will not be handed back: unlinked from the caller's signal, drained until `stop`. */
  release(
    outcome: Extract<Outcome<R>, { ok: true }>,
    stop: Promise<unknown> = Promise.resolve(),
  ): Promise<void> {
    outcome.unlink();
    return this.exchange.discard(outcome.response, stop).catch(noop);
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
    // Nothing to say: no listener of the end, no give-up to report (a success, usually).
    const { on } = this.setup;
    if (on.end === undefined && (this.#giveUp === undefined || on.giveUp === undefined)) {
      return response;
    }
    const status = this.exchange.status(response);
    // Read only for a listener: a response's headers are not scanned for nothing.
    const replayed = on.end === undefined ? undefined : replayedBy(this.exchange.headers(response));
    this.#end(replayed === undefined ? { status } : { status, replayed });
    return response;
  }

  /** The request ends with `error`, thrown to the caller. */
  failed(error: unknown): unknown {
    this.#end(defined({ code: errorCode(error) }));
    return error;
  }

  #end(how: { status?: number; code?: string; replayed?: true }): void {
    const { setup, request } = this;
    const { on } = setup;
    const giveUp = this.#giveUp;
    if (giveUp !== undefined && on.giveUp !== undefined) {
      // How to send it again, non-enumerable: a log that prints the event does not copy the body.
      const replay = request.replayable ? request.replay?.() : undefined;
      if (replay !== undefined) Object.defineProperty(giveUp, 'replay', { value: replay });
      emit(on.giveUp, giveUp);
    }
    if (on.end === undefined) return;
    const duration = setup.clock.now() - this.began;
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
}
