/**
 * After an attempt that was not handed back: the decision (retry/decide.ts),
 * the retry budget's charge (its rule: policy/budget.ts), the `retry` event
 * (when the retry is decided, with its delay, before the wait), and the wait
 * itself, while the failed response is released.
 */
import { emit, type GiveUpReason, type WaitReason } from '../events.js';
import { noop } from '../internal/clock.js';
import { linkSignal } from '../internal/signals.js';
import { chargesBudget, type RetryBudget } from '../policy/budget.js';
import { type Decision, decide } from '../retry/decide.js';
import type { Flight } from './flight.js';
import type { Failure, Lesson, Setup } from './types.js';

/** What follows `lesson`, by the retry table and the delay rules. */
export function next(setup: Setup, flight: Flight<unknown>, lesson: Lesson): Decision {
  const { request, exchange, attempt, previousDelay } = flight;
  const { verdict, pacing } = lesson;
  const { retry } = request;
  return decide(verdict, {
    replayable: request.replayable,
    resendable: () => exchange.resendable(verdict.reason === 'unsent'),
    attempt,
    attempts: retry.attempts,
    timeLeft: flight.deadline - lesson.done,
    hint: pacing?.delay,
    hintSource: pacing?.source,
    maxRetryAfter: retry.maxRetryAfter,
    backoff: () => retry.backoff(attempt, previousDelay, setup.random),
    random: setup.random,
  });
}

type Retry = Extract<Decision, { action: 'retry' }>;

/**
 * The retry `decision` of `failed` goes: paid from the budget, said, waited.
 * A reason instead: the budget refused it, and the request gives up.
 */
export async function retryAfter<R>(
  setup: Setup,
  flight: Flight<R>,
  decision: Retry,
  failed: Failure<R>,
): Promise<GiveUpReason | undefined> {
  const { policies, on } = setup;
  const { lesson, outcome } = failed;
  const { delay, source } = decision;
  const { status, code, kind } = lesson;
  const { budget, breaker, limiter } = policies ?? {};
  if (
    budget !== undefined &&
    chargesBudget(
      decision.charged,
      status,
      limiter !== undefined,
      () => breaker?.refusing(flight.key) === true,
    ) &&
    !(await withdraw(setup, budget, flight, flight.deadline - delay))
  ) {
    return 'budget';
  }
  const { method } = flight.request;
  emit(on.retry, {
    method,
    url: flight.url(),
    attempt: flight.attempt,
    delay,
    delaySource: source,
    reason: lesson.verdict.reason,
    ...(status !== undefined && { status }),
    ...(code !== undefined && { code }),
    ...(kind !== undefined && { kind }),
  });
  // A hint paces only its own retry: the backoff goes on from its own previous delay.
  if (source === 'backoff' && !lesson.verdict.stale) flight.previousDelay = delay;
  const wait = sleep(setup, flight, delay, source === 'backoff' ? 'backoff' : 'server');
  if (outcome.ok) {
    outcome.unlink();
    const drained = flight.exchange.discard(outcome.response, wait).catch(noop);
    await wait;
    await drained;
  } else await wait;
  return undefined;
}

/**
 * Takes a retry from the budget; when it holds none, waits for its floor to
 * refill one, as long as the retry (and its delay after) still fits before
 * `latest`: the budget bounds the rate of retries, it does not drop them. A
 * circuit that opens meanwhile ends the wait uncharged (the retry then
 * waits for the probe's verdict and adds no load). `false`: no time.
 */
async function withdraw(
  setup: Setup,
  budget: RetryBudget,
  flight: Flight<unknown>,
  latest: number,
): Promise<boolean> {
  const { clock, policies } = setup;
  const { key } = flight;
  if (await budget.tryWithdraw(key).catch(() => true)) return true;
  const step = Math.max(50, budget.refillMs);
  const since = clock.now();
  for (;;) {
    if (clock.now() + step >= latest) return false;
    await sleep(setup, flight, step, undefined);
    if (policies?.breaker?.refusing(key) || (await budget.tryWithdraw(key).catch(() => true))) {
      flight.onWait('budget', clock.now() - since, flight.attempt + 1);
      return true;
    }
  }
}

/**
 * Sleeps `ms` under the caller's signal, through the shared link (one
 * listener per parent signal, however many requests sleep on it), then says
 * it as a `wait` of the next attempt for `reason` (none: not said).
 */
async function sleep(
  setup: Setup,
  flight: Flight<unknown>,
  ms: number,
  reason: WaitReason | undefined,
): Promise<void> {
  if (ms <= 0) return;
  const { clock } = setup;
  const since = clock.now();
  const signal = flight.request.signal;
  if (signal === undefined) await clock.sleep(ms);
  else {
    // An abort since the attempt settled: a link to an aborted signal would never fire.
    signal.throwIfAborted();
    const controller = new AbortController();
    const unlink = linkSignal(signal, (why) => controller.abort(why));
    try {
      await clock.sleep(ms, controller.signal);
    } finally {
      unlink();
    }
  }
  if (reason !== undefined) flight.onWait(reason, clock.now() - since, flight.attempt + 1);
}
