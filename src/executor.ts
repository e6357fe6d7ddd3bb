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
import { type Clock, noop, type Random, startTimer } from './internal/clock.js';
import { redactUrl, scrubbedCause, scrubError } from './internal/redact.js';
import { linkSignal } from './internal/signals.js';
import { admit, feedback, type Gate, OPEN_GATE, settleQuietly } from './policy/gate.js';
import type { Policies } from './policy/policies.js';
import { isPromiseLike } from './policy/store-call.js';
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

type Outcome<R> = { ok: true; response: R; unlink: () => void } | { ok: false; error: unknown };

/** A retry scheduled after a failure, said to `retry` listeners when its attempt leaves. */
interface PendingRetry {
  readonly failedAt: number;
  readonly event: RetryEvent;
}

/** Who may retry a failure without a response, and why it is worth retrying. */
function errorVerdict(error: unknown, stale: boolean): AttemptVerdict {
  if (error instanceof DeadlineExceededError)
    return { scope: 'replayable', reason: 'timeout', stale };
  const kind = classifyError(error);
  if (kind === 'unsent') return { scope: 'any', reason: 'unsent', stale };
  return { scope: kind === 'fatal' ? 'never' : 'replayable', reason: 'maybe-sent', stale };
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

  /** Runs `request` through `exchange` until it succeeds, gives up or runs out of time. */
  run<R>(request: LogicalRequest, exchange: Exchange<R>): Promise<R> {
    const listener = this.#on.end;
    if (listener === undefined) return this.#run(request, exchange);
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
    };
    return this.#run(request, counting).then(
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

  async #run<R>(request: LogicalRequest, exchange: Exchange<R>): Promise<R> {
    const clock = this.#clock;
    const policies = this.#policies;
    const { retry, timeout, signal } = request;
    signal?.throwIfAborted();
    const deadline = clock.now() + timeout.total;
    let redacted: string | undefined;
    const url = (): string => {
      redacted ??= redactUrl(request.url);
      return redacted;
    };
    const key = policies === undefined ? '' : policies.key(request);
    if (policies?.budget !== undefined) settleQuietly(() => policies.budget!.deposit(key));
    let previousDelay = 0;
    let lastError: unknown;
    /** The retry under way: told to `retry` listeners once its attempt actually leaves. */
    let pending: PendingRetry | undefined;

    for (let attempt = 1; ; attempt++) {
      let gate = OPEN_GATE;
      if (policies !== undefined) {
        const admitted = this.#admit(policies, key, request, attempt, deadline, url, lastError);
        gate = isPromiseLike(admitted) ? await admitted : admitted;
      }
      const started = clock.now();
      const remaining = deadline - started;
      if (remaining <= 0) {
        gate.release();
        throw this.#giveUpOnDeadline(request, url(), attempt - 1);
      }
      if (pending !== undefined) {
        // The real time from the failure to this attempt: backoff, pacing and every policy wait.
        emit(this.#on.retry, { ...pending.event, delay: started - pending.failedAt });
        pending = undefined;
      }
      const scope: DeadlineScope = timeout.attempt < remaining ? 'attempt' : 'total';
      const limit = Math.min(timeout.attempt, remaining);
      if (this.#on.attemptStart !== undefined) {
        emit(this.#on.attemptStart, { method: request.method, url: url(), attempt });
      }
      const outcome = await this.#attempt(request, exchange, attempt, limit, scope, url);
      gate.release();
      const done = clock.now();

      // Classify the outcome.
      let verdict: AttemptVerdict;
      let status: number | undefined;
      let code: string | undefined;
      let kind: string | undefined;
      let pacing: ServerPacing | undefined;
      if (outcome.ok) {
        status = exchange.status(outcome.response);
        const headers = exchange.headers(outcome.response);
        let refined: ReturnType<typeof refineStatus> | undefined;
        if (status >= 400) {
          const table = classifyStatus(status, headers, retry.statuses);
          const { method } = request;
          refined = refineStatus(this.#classify, {
            method,
            url: request.url,
            status,
            headers,
            scope: table,
          });
          kind = refined.kind;
        }
        if (this.#on.attempt !== undefined) {
          emit(this.#on.attempt, {
            method: request.method,
            url: url(),
            attempt,
            status,
            ...(kind !== undefined && { kind }),
            duration: done - started,
          });
        }
        pacing = this.#pacing(headers, status, done, policies?.limiter !== undefined);
        if (policies !== undefined)
          feedback(policies, key, gate, { status, pacing, sentAt: started });
        if (refined === undefined) {
          return this.#handOver(exchange, outcome.response, outcome.unlink, signal);
        }
        verdict = { scope: refined.scope, reason: 'status', stale: false };
      } else {
        const error = outcome.error;
        const aborted = signal?.aborted === true;
        // The stale keep-alive race (classify.ts, STALE_CONNECTION): resent at once, no backoff,
        // no budget, not a breaker failure. Only a transport can tell; see staunch/undici.
        const stale = !aborted && isStaleConnection(error);
        if (policies !== undefined)
          feedback(policies, key, gate, {
            error,
            sentAt: started,
            notTheUpstream: aborted || stale,
          });
        if (aborted) throw signal!.reason;
        lastError = error;
        code = errorCode(error);
        if (this.#on.attempt !== undefined) {
          emit(this.#on.attempt, {
            method: request.method,
            url: url(),
            attempt,
            ...(code !== undefined && { code }),
            duration: done - started,
          });
        }
        if (error instanceof DeadlineExceededError && error.timeout === 'total') {
          throw this.#giveUpOnDeadline(request, url(), attempt, error);
        }
        verdict = errorVerdict(error, stale);
      }

      const finish = (why: GiveUpReason | undefined, delay?: number): R => {
        if (why !== undefined) {
          this.#giveUp(request, {
            method: request.method,
            url: url(),
            attempts: attempt,
            reason: why,
            ...(status !== undefined && { status }),
            ...(code !== undefined && { code }),
            ...(kind !== undefined && { kind }),
            ...(delay !== undefined && { delay }),
          });
        }
        if (outcome.ok) return this.#handOver(exchange, outcome.response, outcome.unlink, signal);
        throw this.#failure(request, url(), outcome.error, attempt);
      };

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
        const granted = await this.#withdraw(
          policies,
          key,
          deadline - delay,
          request,
          url,
          attempt,
        );
        if (!granted) return finish('budget');
      }

      pending = {
        failedAt: done,
        event: {
          method: request.method,
          url: url(),
          attempt,
          delay,
          delaySource: source,
          reason: verdict.reason,
          ...(status !== undefined && { status }),
          ...(code !== undefined && { code }),
          ...(kind !== undefined && { kind }),
        },
      };
      if (!verdict.stale) previousDelay = delay;
      const reason: WaitReason = source === 'backoff' ? 'backoff' : 'server';
      const wait = this.#sleep(delay, signal, reason, request, url, attempt + 1);
      if (outcome.ok) {
        outcome.unlink();
        const drained = exchange.discard(outcome.response, wait).catch(noop);
        await wait;
        await drained;
      } else {
        await wait;
      }
    }
  }

  /**
   * Takes a retry from the budget; when it holds none, waits for its floor to
   * refill one, as long as the retry (and its `delay` after) still fits
   * before `latest`: the budget bounds the rate of retries, it does not drop
   * them. A circuit that opens meanwhile ends the wait uncharged (the retry
   * then waits for the probe's verdict and adds no load). `false`: no time.
   */
  async #withdraw(
    policies: Policies,
    key: string,
    latest: number,
    request: LogicalRequest,
    url: () => string,
    attempt: number,
  ): Promise<boolean> {
    const budget = policies.budget!;
    if (await budget.tryWithdraw(key).catch(() => true)) return true;
    const step = Math.max(50, budget.refillMs);
    const since = this.#clock.now();
    for (;;) {
      if (this.#clock.now() + step >= latest) return false;
      await this.#sleep(step, request.signal, 'budget', request, url, attempt + 1, false);
      if (policies.breaker?.refusing(key) || (await budget.tryWithdraw(key).catch(() => true))) {
        const listener = this.#on.wait;
        if (listener !== undefined) {
          const duration = this.#clock.now() - since;
          emit(listener, {
            method: request.method,
            url: url(),
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
    request: LogicalRequest,
    url: () => string,
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
        method: request.method,
        url: url(),
        attempt,
        reason,
        duration: this.#clock.now() - since,
      });
    }
  }

  /**
   * The policies' gates before an attempt, in order: a concurrency slot, a
   * rate-limit token, the breaker's admission (which may wait out an open
   * circuit). A refusal throws the policy's error; on a retry, the previous
   * failure is its `cause`. Synchronous when nothing has to wait and the store
   * answers at once (the common case: no concurrency limit, an adaptive
   * limiter not engaged, a closed circuit, the memory store).
   */
  #admit(
    policies: Policies,
    key: string,
    request: LogicalRequest,
    attempt: number,
    deadline: number,
    url: () => string,
    lastError: unknown,
  ): Gate | Promise<Gate> {
    const refusal = (reason: GiveUpReason, make: (context: StaunchErrorOptions) => Error) => {
      this.#giveUp(request, { method: request.method, url: url(), attempts: attempt - 1, reason });
      return make({
        method: request.method,
        url: url(),
        attempts: attempt - 1,
        ...(lastError !== undefined && { cause: scrubbedCause(lastError, request.secrets()) }),
      });
    };
    const listener = this.#on.wait;
    const onWait =
      listener === undefined
        ? undefined
        : (reason: WaitReason, duration: number) =>
            emit(listener, { method: request.method, url: url(), attempt, reason, duration });
    return admit({ policies, clock: this.#clock, key, request, deadline, url, refusal, onWait });
  }

  /**
   * One attempt, raced against its deadline and the caller's signal: the
   * promise settles as soon as either aborts, even if the transport ignores
   * its signal. Every abort goes through `abort` below, so the race needs no
   * listener on the signal. A response that arrives after the abort is
   * released.
   */
  #attempt<R>(
    request: LogicalRequest,
    exchange: Exchange<R>,
    attempt: number,
    limit: number,
    scope: DeadlineScope,
    url: () => string,
  ): Promise<Outcome<R>> {
    return new Promise<Outcome<R>>((resolve) => {
      const controller = new AbortController();
      // `finish` is dropped once the attempt settles: the caller's signal may
      // stay linked to `abort` while the body is read, and must not keep the
      // outcome (and so the response) reachable through it.
      let finish: ((outcome: Outcome<R>) => void) | undefined = resolve;
      let cancelTimer = noop;
      let unlink = noop;
      const settle = (outcome: Outcome<R>): boolean => {
        const f = finish;
        if (f === undefined) return false;
        finish = undefined;
        cancelTimer();
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
        cancelTimer = startTimer(this.#clock, limit, () =>
          abort(this.#deadline(request, url(), scope, attempt)),
        );
      }
      let sent: Promise<R>;
      try {
        sent = exchange.send(controller.signal, attempt);
      } catch (error) {
        sent = Promise.reject(error);
      }
      sent.then(
        (response) => {
          if (!settle({ ok: true, response, unlink })) {
            void exchange.discard(response, Promise.resolve()).catch(noop);
          }
        },
        (error: unknown) => {
          if (finish === undefined) return;
          unlink();
          settle({ ok: false, error });
        },
      );
    });
  }

  /**
   * Emits `giveUp`; a replayable request's event also carries `replay`
   * (non-enumerable, so logs that print the event do not copy the body).
   */
  #giveUp(request: LogicalRequest, event: GiveUpEvent): void {
    const listener = this.#on.giveUp;
    if (listener === undefined) return;
    if (request.replayable && request.replay !== undefined) {
      const replay = request.replay();
      if (replay !== undefined) Object.defineProperty(event, 'replay', { value: replay });
    }
    emit(listener, event);
  }

  #giveUpOnDeadline(
    request: LogicalRequest,
    url: string,
    attempts: number,
    error: DeadlineExceededError = this.#deadline(request, url, 'total', attempts),
  ): DeadlineExceededError {
    this.#giveUp(request, { method: request.method, url, attempts, reason: 'deadline' });
    return error;
  }

  #handOver<R>(
    exchange: Exchange<R>,
    response: R,
    unlink: () => void,
    signal: AbortSignal | undefined,
  ): R {
    if (signal !== undefined) {
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
