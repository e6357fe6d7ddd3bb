/**
 * After an attempt that was not handed back and decided on (`decideNext`, retry/decide.ts): the
 * budget's charge (`payRetry`, policy/gate.ts), `retry` (said before the wait), and the wait itself.
 */
import { defined, emit, type GiveUpReason } from '../events.js';
import { sleepUnder } from '../internal/signals.js';
import { payRetry } from '../policy/gate.js';
import type { Decision } from '../retry/decide.js';
import type { Failure, Flight } from './flight.js';

/**
 * The retry `decision` of `failed` goes: paid from the budget, said, waited.
 * A reason instead: the budget refused it, and the request gives up.
 */
export async function retryAfter<R>(
  flight: Flight<R>,
  decision: Extract<Decision, { action: 'retry' }>,
  { lesson, outcome }: Failure<R>,
): Promise<GiveUpReason | undefined> {
  const { setup } = flight;
  const { delay, source } = decision;
  const { status, code, kind, reason, stale } = lesson;
  const paid = payRetry(flight, setup.policies, decision.charged, status, delay);
  if (paid !== true && !(await paid)) return 'budget';
  emit(setup.on.retry, {
    method: flight.request.method,
    url: flight.url(),
    attempt: flight.attempt,
    delay,
    delaySource: source,
    reason,
    ...defined({ status, code, kind }),
  });
  // A hint paces only its own retry: the backoff goes on from its own previous delay.
  if (source === 'backoff' && !stale) flight.previousDelay = delay;
  const since = setup.clock.now();
  const wait = delay > 0 ? sleepUnder(setup.clock, delay, flight.request.signal) : undefined;
  const drained = outcome.ok ? flight.release(outcome, wait) : undefined;
  await wait;
  await drained;
  if (wait === undefined) return undefined;
  const waited = setup.clock.now() - since;
  flight.onWait(source === 'backoff' ? 'backoff' : 'server', waited, flight.attempt + 1);
  return undefined;
}
