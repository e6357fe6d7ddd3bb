/**
 * What one attempt's outcome teaches: its gate is released, `attempt` is said, the policies are
 * told, and the retry table reads it. A response below 400 is handed back.
 */
import { DeadlineExceededError } from '../errors.js';
import { type AttemptEvent, defined, emit } from '../events.js';
import { feedback } from '../policy/gate.js';
import type { Outcome } from '../request.js';
import {
  classifyResponse,
  errorCode,
  errorScope,
  isStaleConnection,
  replayedBy,
} from '../retry/classify.js';
import type { AttemptVerdict } from '../retry/decide.js';
import type { Flight } from './flight.js';
import type { Lesson, Setup } from './types.js';

type Fields<E> = { [K in keyof E]?: E[K] | undefined };

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
  const { policies } = setup;
  const { request, exchange, started } = flight;
  const status = exchange.status(response);
  const headers = exchange.headers(response);
  const refined =
    status >= 400 ? classifyResponse(setup.classify, request, status, headers) : undefined;
  const kind = refined?.kind;
  // Read only for a listener: a response's headers are not scanned for nothing.
  const replayed = setup.on.attempt === undefined ? undefined : replayedBy(headers);
  say(setup, flight, done, { status, kind, replayed });
  const pacing = setup.pacing(headers, status, done, policies?.limiter !== undefined);
  if (policies !== undefined) {
    feedback(policies, flight.key, flight.gate, { status, pacing, sentAt: started }, done);
  }
  if (refined === undefined) {
    // What `hedge.delay: 'auto'` reads (policy/hedge/latency.ts): the time to headers of a success.
    if (request.hedge?.delay === 'auto') setup.latency.record(flight.key, done - started);
    return undefined;
  }
  const inFlight = refined.inFlight === true;
  const verdict: AttemptVerdict = {
    scope: refined.scope,
    reason: 'status',
    stale: false,
    inFlight,
  };
  const mismatch = refined.mismatch === true;
  return { verdict, status, code: undefined, kind, pacing, mismatch, done };
}

function fromError(setup: Setup, flight: Flight<unknown>, error: unknown, done: number): Lesson {
  const { policies } = setup;
  const { request, started } = flight;
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
  say(setup, flight, done, { code });
  if (error instanceof DeadlineExceededError && error.timeout === 'total') {
    flight.giveUp('deadline', flight.sent);
    throw error;
  }
  const verdict: AttemptVerdict = { ...errorScope(error), stale };
  return { verdict, status: undefined, code, kind: undefined, pacing: undefined, done };
}

/** Says `attempt`: how the attempt under way ended, at `done`. */
function say(setup: Setup, flight: Flight<unknown>, done: number, how: Fields<AttemptEvent>) {
  const listener = setup.on.attempt;
  if (listener === undefined) return;
  const { method } = flight.request;
  const duration = done - flight.started;
  const { attempt, hedge } = flight;
  emit(listener, {
    method,
    url: flight.url(),
    attempt,
    ...defined(how),
    ...(hedge && { hedge }),
    duration,
  });
}
