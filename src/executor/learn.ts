/**
 * What one attempt's outcome teaches: its gate is released, `attempt` is said, the policies are
 * told, and the retry table reads it. A response below 400 is handed back.
 */
import { DeadlineExceededError } from '../errors.js';
import { feedback, type Sent } from '../policy/gate.js';
import type { Outcome } from '../request.js';
import {
  classifyResponse,
  errorCode,
  errorScope,
  isStaleConnection,
  replayedBy,
} from '../retry/classify.js';
import type { Lesson } from '../retry/decide.js';
import type { Flight } from './flight.js';

/**
 * Learns from the `outcome` of `sent` (the flight's attempt under way, or a
 * hedge). `undefined`: a response to hand back. Throws when the request ends
 * here: the caller aborted (its own reason), or the total deadline passed.
 */
export function learn<R>(flight: Flight<R>, sent: Sent, outcome: Outcome<R>): Lesson | undefined {
  sent.gate.release();
  const done = flight.clock.now();
  return outcome.ok
    ? fromResponse(flight, sent, outcome.response, done)
    : fromError(flight, sent, outcome.error, done);
}

function fromResponse<R>(flight: Flight<R>, sent: Sent, response: R, done: number) {
  const { request, exchange, setup } = flight;
  const { policies } = setup;
  const { started } = sent;
  const status = exchange.status(response);
  const headers = exchange.headers(response);
  const refined =
    status >= 400 ? classifyResponse(setup.classify, request, status, headers) : undefined;
  const kind = refined?.kind;
  // Said only to a listener: a response's headers are not scanned for nothing.
  if (setup.on.attempt !== undefined) {
    flight.onAttempt(sent, done, { status, kind, replayed: replayedBy(headers) });
  }
  const pacing = setup.pacing(headers, status, done, policies?.limiter !== undefined);
  if (policies !== undefined) {
    feedback(policies, flight.key, sent.gate, { status, pacing, sentAt: started }, done);
  }
  if (refined === undefined) {
    // What `hedge.delay: 'auto'` reads (policy/hedge/latency.ts): the time to headers of a success.
    if (request.hedge?.delay === 'auto') setup.latency.record(flight.key, done - started);
    return undefined;
  }
  const { scope, inFlight = false, mismatch = false } = refined;
  const verdict = { scope, reason: 'status', stale: false, inFlight } as const;
  return { ...verdict, status, code: undefined, kind, pacing, mismatch, done };
}

function fromError(flight: Flight<unknown>, sent: Sent, error: unknown, done: number): Lesson {
  const { request } = flight;
  const { policies } = flight.setup;
  const aborted = request.signal?.aborted === true;
  // The stale keep-alive race (classify.ts, STALE_CONNECTION): resent at once, no backoff,
  // no budget, not a breaker failure. Only a transport can tell; see staunch/undici.
  const stale = !aborted && isStaleConnection(error);
  if (policies !== undefined) {
    const told = { error, sentAt: sent.started, notTheUpstream: aborted || stale };
    feedback(policies, flight.key, sent.gate, told, done);
  }
  if (aborted) throw request.signal!.reason;
  flight.lastError = error;
  const code = errorCode(error);
  flight.onAttempt(sent, done, { code });
  if (error instanceof DeadlineExceededError && error.timeout === 'total') {
    flight.giveUp('deadline', flight.sent);
    throw error;
  }
  const { scope, reason } = errorScope(error);
  const status = undefined;
  return { scope, reason, stale, status, code, kind: undefined, pacing: undefined, done };
}
