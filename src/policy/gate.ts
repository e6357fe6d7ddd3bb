/**
 * The policies' gates around one attempt, in the order of docs/policies.md:
 * a concurrency slot, a rate-limit token, the breaker's admission before it;
 * the breaker's and the limiter's lessons after it; the budget's charge for
 * a retry. Synchronous whenever nothing has to wait and the store answers at once.
 */
import {
  CircuitOpenError,
  DeadlineExceededError,
  type DeadlineScope,
  QueueFullError,
  QueueTimeoutError,
  RateLimitedError,
  type StaunchErrorOptions,
} from '../errors.js';
import type { GiveUpReason, WaitReason } from '../events.js';
import { type Clock, noop } from '../internal/clock.js';
import { scrubbedCause } from '../internal/redact.js';
import type { LogicalRequest } from '../request.js';
import { isInvalidRequest } from '../retry/classify.js';
import type { ServerPacing } from '../retry/server-delay.js';
import type { BreakerAdmission, BreakerTicket, CircuitBreaker } from './breaker/breaker.js';
import { chargesBudget } from './budget/budget.js';
import type { Policies } from './policies.js';
import type { RateLimitHint } from './rate/limiter.js';
import { ignoreRejection, isPromiseLike } from './store-call.js';

/** What the policies granted one attempt. */
export interface Gate {
  release: () => void;
  ticket: BreakerTicket | undefined;
}

export const OPEN_GATE: Gate = { release: noop, ticket: undefined };

/**
 * An attempt that left: the executor's own attempt under way, or a hedge beside
 * it (policy/hedge/round.ts). It may take `limit` ms from `started` before
 * its deadline, of `scope`, ends it; its `gate` is given back when it ends.
 */
export interface Sent {
  readonly attempt: number;
  readonly gate: Gate;
  readonly started: number;
  readonly limit: number;
  readonly scope: DeadlineScope;
  readonly hedge?: true;
}

/** How an attempt's outcome counts for the circuit breaker. */
function breakerOutcome(status: number | undefined, error: unknown, callerAborted: boolean) {
  if (status !== undefined)
    return status >= 500 ? 'failure' : status >= 400 ? 'neutral' : 'success';
  if (callerAborted || isInvalidRequest(error)) return 'cancelled'; // the caller's fault, not the upstream's
  // A request that ran out of its own total time says little about the upstream's health.
  if (error instanceof DeadlineExceededError && error.timeout === 'total') return 'cancelled';
  return 'failure';
}

/**
 * What admission needs to know about the request and how to report. The
 * executor's per-request state implements it, so that admitting an attempt
 * allocates nothing.
 */
export interface AdmitContext {
  readonly clock: Clock;
  readonly key: string;
  readonly request: LogicalRequest;
  /** The attempt being admitted, 1 for the first: who may carry a half-open probe. */
  readonly attempt: number;
  /** Clock time the logical request's total deadline expires. */
  readonly deadline: number;
  /** The request's URL, redacted. */
  url(): string;
  /** The previous attempt's failure: a refusal's cause. */
  readonly lastError: unknown;
  /** The request gives up after `attempts` for `reason` (said at its end). */
  giveUp(reason: GiveUpReason, attempts: number): void;
  /** Told of every wait before an attempt (`attempt`, else the one admitted) that took time. */
  onWait(reason: WaitReason, duration: number, attempt?: number): void;
}

/**
 * Admits one attempt, or throws a policy's {@link refusal}; attempt 1 first
 * earns the budget its credit. Synchronous in the common case: no concurrency
 * limit, an adaptive limiter not engaged, a closed circuit, a store that
 * answers at once. An open circuit that the request may wait out (see
 * {@link CircuitBreaker.wait}) makes it wait, then admission starts again
 * from the first gate: no attempt is spent on it.
 */
export function admit(
  ctx: AdmitContext,
  policies: Policies,
  now: number = ctx.clock.now(),
): Gate | Promise<Gate> {
  if (ctx.attempt === 1) policies.budget?.credit(ctx.key, now);
  const { concurrency, limiter } = policies;
  if (concurrency === undefined && (limiter === undefined || limiter.pass(ctx.key, now))) {
    const hold = askHold(ctx, policies, now);
    if (hold === 0) return admitBreaker(ctx, policies, noop, now);
    return admitWaiting(ctx, policies, hold);
  }
  return admitWaiting(ctx, policies);
}

/** What the `hold` hook asks of this attempt: ms > 0, else 0. */
export function askHold(
  ctx: AdmitContext,
  policies: Policies,
  now: number = ctx.clock.now(),
): number {
  const hook = policies.hold;
  if (hook === undefined) return 0;
  const { request, key } = ctx;
  let ms: unknown;
  try {
    ms = hook({ method: request.method, url: request.url, body: request.body, key }, now);
  } catch {
    return 0;
  }
  return typeof ms === 'number' && ms > 0 && Number.isFinite(ms) ? Math.ceil(ms) : 0;
}

/**
 * Waits out the `hold` hook's answers (`first`, already asked, or a new
 * one), within the deadline: a hold past it is a `RateLimitedError`.
 */
async function holdOut(ctx: AdmitContext, policies: Policies, first: number): Promise<void> {
  const { clock, deadline, request, key } = ctx;
  const since = clock.now();
  try {
    for (let ms = first; ms > 0; ms = askHold(ctx, policies)) {
      if (ms > deadline - clock.now()) {
        throw refusal(
          ctx,
          'rate-limited',
          (c) =>
            new RateLimitedError(
              `${request.method} ${ctx.url()}: held for ${key} past the deadline (${ms} ms)`,
              ms,
              c,
            ),
        );
      }
      await clock.sleep(ms, request.signal);
    }
  } finally {
    waited(ctx, 'rate-limit', since);
  }
}

/** A policy refused the attempt: `giveUp`, then its error (the previous failure its cause). */
function refusal(
  ctx: AdmitContext,
  reason: GiveUpReason,
  make: (context: StaunchErrorOptions) => Error,
): Error {
  const { request, attempt, lastError } = ctx;
  ctx.giveUp(reason, attempt - 1);
  return make({
    method: request.method,
    url: ctx.url(),
    attempts: attempt - 1,
    ...(lastError !== undefined && { cause: scrubbedCause(lastError, request.secrets()) }),
  });
}

function waited(ctx: AdmitContext, reason: WaitReason, since: number): void {
  const duration = ctx.clock.now() - since;
  if (duration > 0) ctx.onWait(reason, duration);
}

/**
 * The gates that may wait: a concurrency slot, then a rate-limit token and
 * the `hold` hook, then the breaker. `held`: the limiter already passed and
 * the hook answered this.
 */
async function admitWaiting(ctx: AdmitContext, policies: Policies, held?: number): Promise<Gate> {
  const { clock, key, request, deadline } = ctx;
  const { concurrency, limiter } = policies;
  const signal = request.signal;
  let release = noop;
  try {
    if (concurrency !== undefined) {
      const since = clock.now();
      const slot = await concurrency.acquire(key, deadline - since, signal);
      waited(ctx, 'queue', since);
      if (!slot.ok) {
        const full = slot.reason === 'full';
        const what = full ? 'queue is full' : 'wait for a slot timed out';
        const message = `${request.method} ${ctx.url()}: concurrency ${what} for ${key}`;
        throw full
          ? refusal(ctx, 'queue-full', (c) => new QueueFullError(message, c))
          : refusal(ctx, 'queue-timeout', (c) => new QueueTimeoutError(message, c));
      }
      release = slot.release;
      signal?.throwIfAborted();
    }
    if (held === undefined && limiter !== undefined && !limiter.pass(key)) {
      const since = clock.now();
      const token = await limiter.acquire(key, deadline - since, signal);
      waited(ctx, 'rate-limit', since);
      if (!token.ok) {
        const next = Math.ceil(token.retryAfter);
        throw refusal(
          ctx,
          'rate-limited',
          (c) =>
            new RateLimitedError(
              `${request.method} ${ctx.url()}: rate limit for ${key} has no token within the deadline (next in ${next} ms)`,
              token.retryAfter,
              c,
            ),
        );
      }
    }
    const hold = held ?? askHold(ctx, policies);
    if (hold > 0) await holdOut(ctx, policies, hold);
    return await admitBreaker(ctx, policies, release);
  } catch (error) {
    release();
    throw error;
  }
}

function circuitOpen(ctx: AdmitContext, retryAfter: number): Error {
  const { request, key } = ctx;
  const next = Math.ceil(retryAfter);
  return refusal(
    ctx,
    'circuit-open',
    (c) =>
      new CircuitOpenError(
        `${request.method} ${ctx.url()}: circuit open for ${key} (next probe in ${next} ms)`,
        retryAfter,
        c,
      ),
  );
}

function admitBreaker(
  ctx: AdmitContext,
  policies: Policies,
  release: () => void,
  now: number = ctx.clock.now(),
): Gate | Promise<Gate> {
  const { key, request, deadline } = ctx;
  const breaker = policies.breaker;
  if (breaker === undefined) return release === noop ? OPEN_GATE : { release, ticket: undefined };
  const remaining = deadline - now;
  // Waiting is for a request that may still be retried; `retry: false` fails fast.
  const mayWait = !breaker.failFast && request.retry.attempts > 1;
  const lease = Math.min(request.timeout.attempt, remaining);
  let admission: BreakerAdmission | Promise<BreakerAdmission>;
  try {
    admission = breaker.admit(
      key,
      lease,
      mayWait ? Math.min(remaining, breaker.waitLease) : 0,
      now,
      request.retry.attempts - ctx.attempt,
    );
  } catch (error) {
    release();
    throw error;
  }
  if (isPromiseLike(admission)) {
    return admission.then(
      (a) => decideBreaker(ctx, policies, breaker, release, a, mayWait, remaining),
      (error: unknown) => {
        release();
        throw error;
      },
    );
  }
  return decideBreaker(ctx, policies, breaker, release, admission, mayWait, remaining);
}

/** The gate of a breaker's admission: the ticket, or a wait for the verdict, or the refusal. */
function decideBreaker(
  ctx: AdmitContext,
  policies: Policies,
  breaker: CircuitBreaker,
  release: () => void,
  admission: BreakerAdmission,
  mayWait: boolean,
  remaining: number,
): Gate | Promise<Gate> {
  if (admission.ok) return gateOf(release, admission.ticket);
  release();
  // Its deadline must outlast the next probe (or the next look at the verdict).
  if (mayWait && remaining > Math.min(admission.retryAfter, breaker.probeInterval)) {
    return waitOut(ctx, policies, breaker, admission.retryAfter);
  }
  throw circuitOpen(ctx, admission.retryAfter);
}

/** The last gate built with nothing to release: every call of a closed period shares its ticket. */
let lastGate: Gate = OPEN_GATE;

function gateOf(release: () => void, ticket: BreakerTicket): Gate {
  if (release !== noop) return { release, ticket };
  if (lastGate.ticket !== ticket) lastGate = Object.freeze({ release: noop, ticket });
  return lastGate;
}

/** Waits for the circuit's verdict, then starts admission again; a wait that times out is a refusal. */
async function waitOut(
  ctx: AdmitContext,
  policies: Policies,
  breaker: CircuitBreaker,
  retryAfter: number,
): Promise<Gate> {
  const since = ctx.clock.now();
  const spare = ctx.request.retry.attempts - ctx.attempt;
  const go = await breaker.wait(ctx.key, ctx.deadline - since, ctx.request.signal, spare);
  waited(ctx, 'circuit-open', since);
  if (!go) throw circuitOpen(ctx, retryAfter);
  return admitWaiting(ctx, policies);
}

/**
 * Pays for the retry that follows `ctx`'s attempt from the budget, if it costs
 * one (`chargesBudget`: `charged` by the decision, after `status`): when the
 * budget holds none, waits for one (a `budget` wait) while the retry, `delay`
 * ms later, still fits in the deadline. `true` at once when it costs nothing;
 * `false`: none in time, and the request gives up.
 */
export function payRetry(
  ctx: AdmitContext,
  policies: Policies | undefined,
  charged: boolean,
  status: number | undefined,
  delay: number,
): true | Promise<boolean> {
  if (policies?.budget === undefined) return true;
  const { budget, breaker, limiter } = policies;
  const open = (): boolean => breaker?.refusing(ctx.key) === true;
  if (!chargesBudget(charged, status, limiter !== undefined, open)) return true;
  const taken = budget.take(ctx.key, ctx.deadline - delay, ctx.request.signal, open);
  return taken.then((waited) => {
    if (waited !== false && waited > 0) ctx.onWait('budget', waited, ctx.attempt + 1);
    return waited !== false;
  });
}

/** How one attempt ended, as the policies learn from it. */
export interface AttemptOutcome {
  /** The response's status, when there was one. */
  readonly status?: number | undefined;
  /** The failure, when there was no response. */
  readonly error?: unknown;
  readonly pacing?: ServerPacing | undefined;
  /** Clock time the attempt was sent. */
  readonly sentAt: number;
  /**
   * The failure says nothing of the upstream's health: the caller aborted, or
   * the stale keep-alive race. The breaker counts it as cancelled.
   */
  readonly notTheUpstream?: boolean;
}

/**
 * Tells the breaker and the rate limiter how an attempt went. Never blocks,
 * never throws. `now`: the clock time it ended, read once for both.
 */
export function feedback(
  policies: Policies,
  key: string,
  gate: Gate,
  o: AttemptOutcome,
  now: number,
): void {
  const { status, error, pacing, sentAt } = o;
  const callerAborted = o.notTheUpstream === true;
  const { breaker, limiter } = policies;
  if (breaker !== undefined && gate.ticket !== undefined) {
    const outcome = breakerOutcome(status, error, callerAborted);
    const ticket = gate.ticket;
    try {
      ignoreRejection(breaker.record(key, ticket, outcome, now));
    } catch {
      // The breaker learns on a best-effort basis.
    }
  }
  if (limiter !== undefined && status !== undefined) {
    try {
      const hint: RateLimitHint =
        pacing === undefined ? { sentAt } : pacingHint(status, pacing, sentAt);
      // A 429 in the release of a backlog: the limiter's meters were silenced by the outage.
      if (status === 429 && breaker?.releasing(key) === true) hint.released = true;
      const pending = limiter.onResponse(key, status, hint, now);
      if (pending !== undefined) pending.catch(noop);
    } catch {
      // The limiter learns on a best-effort basis.
    }
  }
}

/** What the rate limiter learns from a response that carried pacing headers. */
function pacingHint(status: number, pacing: ServerPacing, sentAt: number) {
  return {
    sentAt,
    ...(pacing.remaining !== undefined && { remaining: pacing.remaining }),
    ...(pacing.rate !== undefined && { rate: pacing.rate }),
    ...(pacing.policy !== undefined && { policy: pacing.policy }),
    ...(pacing.window !== undefined && { window: pacing.window }),
    ...((status === 429 || status === 503) &&
      pacing.delay !== undefined && { retryAfter: pacing.delay }),
    // The quota is spent: the delay then is its reset (server-delay.ts reads it for remaining 0),
    // unless a `pacing` reader told the window's reset apart.
    ...(pacing.remaining === 0 &&
      (pacing.reset ?? pacing.delay) !== undefined && { reset: pacing.reset ?? pacing.delay }),
  };
}
