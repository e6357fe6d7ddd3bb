/**
 * What one attempt's outcome teaches: its gate is released, `attempt` is
 * said, the policies are told, and the retry table reads it. A response
 * below 400 teaches nothing more: it is handed back.
 */
import { DeadlineExceededError } from '../errors.js';
import { emit } from '../events.js';
import { feedback } from '../policy/gate.js';
import {
  classifyError,
  classifyStatus,
  errorCode,
  isStaleConnection,
  refineStatus,
} from '../retry/classify.js';
import type { AttemptVerdict } from '../retry/decide.js';
import type { Flight } from './flight.js';
import type { Lesson, Outcome, Setup } from './types.js';

/**
 * Learns from the attempt under way's `outcome`. `undefined`: a response to
 * hand back. Throws when the request ends here: the caller aborted (its own
 * reason), or the total deadline passed.
 */
export function learn<R>(setup: Setup, flight: Flight<R>, outcome: Outcome<R>): Lesson | undefined {
  flight.gate.release();
  const done = setup.clock.now();
  return outcome.ok
    ? fromResponse(setup, flight, outcome.response, done)
    : fromError(setup, flight, outcome.error, done);
}

function fromResponse<R>(setup: Setup, flight: Flight<R>, response: R, done: number) {
  const { policies, on } = setup;
  const { request, exchange, attempt, started } = flight;
  const status = exchange.status(response);
  const headers = exchange.headers(response);
  let refined: ReturnType<typeof refineStatus> | undefined;
  if (status >= 400) {
    const scope = classifyStatus(status, headers, request.retry.statuses);
    const { method, url } = request;
    refined = refineStatus(setup.classify, { method, url, status, headers, scope });
  }
  const kind = refined?.kind;
  if (on.attempt !== undefined) {
    emit(on.attempt, {
      method: request.method,
      url: flight.url(),
      attempt,
      status,
      ...(kind !== undefined && { kind }),
      duration: done - started,
    });
  }
  const pacing = setup.pacing(headers, status, done, policies?.limiter !== undefined);
  if (policies !== undefined) {
    feedback(policies, flight.key, flight.gate, { status, pacing, sentAt: started }, done);
  }
  if (refined === undefined) return undefined;
  const verdict: AttemptVerdict = { scope: refined.scope, reason: 'status', stale: false };
  return { verdict, status, code: undefined, kind, pacing, done };
}

function fromError(setup: Setup, flight: Flight<unknown>, error: unknown, done: number): Lesson {
  const { policies, on } = setup;
  const { request, attempt, started } = flight;
  const aborted = request.signal?.aborted === true;
  // The stale keep-alive race (classify.ts, STALE_CONNECTION): resent at once, no backoff,
  // no budget, not a breaker failure. Only a transport can tell; see staunch/undici.
  const stale = !aborted && isStaleConnection(error);
  if (policies !== undefined) {
    const told = { error, sentAt: started, notTheUpstream: aborted || stale };
    feedback(policies, flight.key, flight.gate, told, done);
  }
  if (aborted) throw request.signal!.reason;
  flight.lastError = error;
  const code = errorCode(error);
  if (on.attempt !== undefined) {
    emit(on.attempt, {
      method: request.method,
      url: flight.url(),
      attempt,
      ...(code !== undefined && { code }),
      duration: done - started,
    });
  }
  if (error instanceof DeadlineExceededError && error.timeout === 'total') {
    flight.giveUp('deadline', attempt);
    throw error;
  }
  return {
    verdict: verdict(error, stale),
    status: undefined,
    code,
    kind: undefined,
    pacing: undefined,
    done,
  };
}

/** Who may retry a failure without a response, and why it is worth retrying. */
function verdict(error: unknown, stale: boolean): AttemptVerdict {
  if (error instanceof DeadlineExceededError)
    return { scope: 'replayable', reason: 'timeout', stale };
  const kind = classifyError(error);
  if (kind === 'unsent') return { scope: 'any', reason: 'unsent', stale };
  return { scope: kind === 'fatal' ? 'never' : 'replayable', reason: 'maybe-sent', stale };
}
