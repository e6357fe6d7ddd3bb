/**
 * The policies' gates around one attempt, in the order of docs/policies.md:
 * a concurrency slot, a rate-limit token, the breaker's admission before it;
 * the breaker's and the limiter's lessons after it. Synchronous whenever
 * nothing has to wait and the store answers at once.
 */
import {
  CircuitOpenError,
  DeadlineExceededError,
  QueueFullError,
  QueueTimeoutError,
  RateLimitedError,
  type StaunchErrorOptions,
} from '../errors.js';
import type { GiveUpReason } from '../events.js';
import type { LogicalRequest } from '../executor.js';
import { type Clock, noop } from '../internal/clock.js';
import type { ServerPacing } from '../retry/server-delay.js';
import type { BreakerAdmission, BreakerTicket } from './breaker.js';
import type { Policies } from './policies.js';
import { isPromiseLike } from './store-call.js';

/** What the policies granted one attempt. */
export interface Gate {
  release: () => void;
  ticket: BreakerTicket | undefined;
}

export const OPEN_GATE: Gate = { release: noop, ticket: undefined };

/** Builds a policy's refusal error (and says `giveUp`), given the request's context. */
export type Refusal = (
  reason: GiveUpReason,
  make: (context: StaunchErrorOptions) => Error,
) => Error;

/** How an attempt's outcome counts for the circuit breaker. */
function breakerOutcome(status: number | undefined, error: unknown, callerAborted: boolean) {
  if (status !== undefined)
    return status >= 500 ? 'failure' : status >= 400 ? 'neutral' : 'success';
  if (callerAborted) return 'cancelled';
  // A request that ran out of its own total time says little about the upstream's health.
  if (error instanceof DeadlineExceededError && error.timeout === 'total') return 'cancelled';
  return 'failure';
}

/**
 * Admits one attempt, or throws the refusal `refusal` builds. Synchronous in
 * the common case: no concurrency limit, an adaptive limiter not engaged, a
 * store that answers at once.
 */
export function admit(
  policies: Policies,
  clock: Clock,
  key: string,
  request: LogicalRequest,
  deadline: number,
  url: () => string,
  refusal: Refusal,
): Gate | Promise<Gate> {
  const { concurrency, limiter } = policies;
  if (concurrency === undefined && (limiter === undefined || limiter.pass(key))) {
    return admitBreaker(policies, clock, key, request, deadline, noop, url, refusal);
  }
  return admitWaiting(policies, clock, key, request, deadline, url, refusal);
}

/** The gates that may wait: a concurrency slot, then a rate-limit token, then the breaker. */
async function admitWaiting(
  policies: Policies,
  clock: Clock,
  key: string,
  request: LogicalRequest,
  deadline: number,
  url: () => string,
  refusal: Refusal,
): Promise<Gate> {
  const { concurrency, limiter } = policies;
  const signal = request.signal;
  let release = noop;
  try {
    if (concurrency !== undefined) {
      const slot = await concurrency.acquire(key, deadline - clock.now(), signal);
      if (!slot.ok) {
        const full = slot.reason === 'full';
        const what = full ? 'queue is full' : 'wait for a slot timed out';
        const message = `${request.method} ${url()}: concurrency ${what} for ${key}`;
        throw full
          ? refusal('queue-full', (c) => new QueueFullError(message, c))
          : refusal('queue-timeout', (c) => new QueueTimeoutError(message, c));
      }
      release = slot.release;
      signal?.throwIfAborted();
    }
    if (limiter !== undefined && !limiter.pass(key)) {
      const token = await limiter.acquire(key, deadline - clock.now(), signal);
      if (!token.ok) {
        const next = Math.ceil(token.retryAfter);
        throw refusal(
          'rate-limited',
          (c) =>
            new RateLimitedError(
              `${request.method} ${url()}: rate limit for ${key} has no token within the deadline (next in ${next} ms)`,
              token.retryAfter,
              c,
            ),
        );
      }
    }
    return await admitBreaker(policies, clock, key, request, deadline, release, url, refusal);
  } catch (error) {
    release();
    throw error;
  }
}

function admitBreaker(
  policies: Policies,
  clock: Clock,
  key: string,
  request: LogicalRequest,
  deadline: number,
  release: () => void,
  url: () => string,
  refusal: Refusal,
): Gate | Promise<Gate> {
  const breaker = policies.breaker;
  if (breaker === undefined) return { release, ticket: undefined };
  const decide = (admission: BreakerAdmission): Gate => {
    if (admission.ok) return { release, ticket: admission.ticket };
    release();
    const next = Math.ceil(admission.retryAfter);
    throw refusal(
      'circuit-open',
      (c) =>
        new CircuitOpenError(
          `${request.method} ${url()}: circuit open for ${key} (next probe in ${next} ms)`,
          admission.retryAfter,
          c,
        ),
    );
  };
  const lease = Math.min(request.timeout.attempt, deadline - clock.now());
  let admission: BreakerAdmission | Promise<BreakerAdmission>;
  try {
    admission = breaker.admit(key, lease);
  } catch (error) {
    release();
    throw error;
  }
  if (isPromiseLike(admission)) {
    return admission.then(decide, (error: unknown) => {
      release();
      throw error;
    });
  }
  return decide(admission);
}

/** Tells the breaker and the rate limiter how an attempt went. Never blocks, never throws. */
export function feedback(
  policies: Policies,
  key: string,
  gate: Gate,
  status: number | undefined,
  error: unknown,
  pacing: ServerPacing | undefined,
  sentAt: number,
  callerAborted = false,
): void {
  const { breaker, limiter } = policies;
  if (breaker !== undefined && gate.ticket !== undefined) {
    const outcome = breakerOutcome(status, error, callerAborted);
    const ticket = gate.ticket;
    settleQuietly(() => breaker.record(key, ticket, outcome));
  }
  if (limiter !== undefined && status !== undefined) {
    try {
      const hint = {
        sentAt,
        ...(pacing?.remaining !== undefined && { remaining: pacing.remaining }),
        ...((status === 429 || status === 503) &&
          pacing?.delay !== undefined && { retryAfter: pacing.delay }),
        // The quota is spent: the delay then is its reset (server-delay.ts reads it for remaining 0).
        ...(pacing?.remaining === 0 && pacing.delay !== undefined && { reset: pacing.delay }),
      };
      const pending = limiter.onResponse(key, status, hint);
      if (pending !== undefined) pending.catch(noop);
    } catch {
      // The limiter learns on a best-effort basis.
    }
  }
}

/** Runs a fire-and-forget policy call: a failure (sync or async) is ignored. */
export function settleQuietly(call: () => void | Promise<void>): void {
  try {
    const pending = call();
    if (pending !== undefined) pending.catch(noop);
  } catch {
    // Policies learn on a best-effort basis; the request goes on.
  }
}
