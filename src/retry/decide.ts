/**
 * The retry decision, as a pure function: given how an attempt ended, what
 * the request is, how many attempts and how much time are left, and what the
 * server said about pacing, retry now, retry after N ms, or give up (and
 * why). No I/O, no clock, no policy state: the executor only sequences what
 * this decides. The table of DESIGN.md ("When may an outcome be retried?")
 * is `classify.ts`; the delay rules ("Delays") are here.
 */
import type { GiveUpReason, RetryReason } from '../events.js';
import type { Random } from '../internal/clock.js';
import type { ResolvedRetryOptions } from '../options.js';
import type { RetryScope } from './classify.js';
import type { PacingSource, ServerPacing } from './server-delay.js';

/** How an attempt ended, as the decision needs it. */
export interface AttemptVerdict {
  /** Who may retry it (classify.ts). */
  readonly scope: RetryScope;
  readonly reason: RetryReason;
  /**
   * The stale keep-alive race (classify.ts, `STALE_CONNECTION`): a maybe-sent
   * failure that is resent at once and charged to nothing.
   */
  readonly stale: boolean;
  /**
   * A wait, not a failure: a 409 to a keyed request (its key's first request
   * is still in flight, classify.ts) is retried charged to nothing. @default false
   */
  readonly inFlight?: boolean;
}

/**
 * What an attempt that is not handed back taught (executor/learn.ts): the
 * retry table's verdict, and how to go on.
 */
export interface Lesson extends AttemptVerdict {
  readonly status: number | undefined;
  readonly code: string | undefined;
  /** What kind of refusal a classifier saw (`llm()`: `requests`, `tokens`, a quota code…). */
  readonly kind: string | undefined;
  readonly pacing: ServerPacing | undefined;
  /** A 422 to a keyed request: its key was used before with another payload. */
  readonly mismatch?: boolean;
  /** Clock time the attempt ended. */
  readonly done: number;
}

/** Everything the decision depends on besides the verdict. */
export interface DecisionInput {
  /** Idempotent method or idempotency key. */
  readonly replayable: boolean;
  /** Whether the body can be sent again after this outcome (a stream read once cannot). */
  readonly resendable: () => boolean;
  /** The attempt that ended, 1 for the first. */
  readonly attempt: number;
  /** `retry.attempts`: total attempts allowed. */
  readonly attempts: number;
  /** ms left before the total deadline. */
  readonly timeLeft: number;
  /** The server's pacing hint, ms, if it gave a valid one. */
  readonly hint: number | undefined;
  readonly hintSource: PacingSource | undefined;
  /** `retry.maxRetryAfter`. */
  readonly maxRetryAfter: number;
  /** The backoff schedule's delay for this retry (only read when there is no hint). */
  readonly backoff: () => number;
  readonly random: Random;
}

/**
 * What the decision reads of a request on its way, to build its
 * {@link DecisionInput} ({@link decideNext}); the executor's flight is one.
 */
export interface RetryContext {
  readonly request: { readonly replayable: boolean; readonly retry: ResolvedRetryOptions };
  readonly exchange: { resendable(unsent: boolean): boolean };
  /** The attempt that ended, 1 for the first; the backoff's own previous delay. */
  readonly attempt: number;
  readonly previousDelay: number;
  /** Clock time the total deadline expires. */
  readonly deadline: number;
  readonly setup: { readonly random: Random };
}

/** What to do after an attempt. */
export type Decision =
  /** Not retryable at all: hand back (or throw) what the attempt produced, no `giveUp`. */
  | { readonly action: 'done' }
  /** Retryable, but it will not be retried: say `giveUp`, then hand back or throw. */
  | { readonly action: 'give-up'; readonly reason: GiveUpReason; readonly delay?: number }
  /** Retry after `delay` ms. `charged`: a retry of a failure, paid from the retry budget. */
  | {
      readonly action: 'retry';
      readonly delay: number;
      readonly source: PacingSource | 'backoff';
      readonly charged: boolean;
    };

const DONE: Decision = Object.freeze({ action: 'done' });

/**
 * Extra spread added to a server's hint so clients told the same second do
 * not return together: up to a fifth of the hint, at most a second. A hint
 * of 0 gets none: the server said "now", and a sequential client that it
 * paces that way must not lose 50 ms a request to a spread (issue 9).
 */
export function hintSpread(hint: number, random: Random): number {
  return random() * Math.min(1000, hint * 0.2);
}

function giveUp(reason: GiveUpReason, delay?: number): Decision {
  return delay === undefined ? { action: 'give-up', reason } : { action: 'give-up', reason, delay };
}

/**
 * Decides what follows an attempt. In order: not retryable → done; maybe
 * sent and not replayable → give up; body not resendable → give up; no
 * attempts left → give up; then the delay: the server's hint wins over the
 * backoff (plus a spread), a hint over `maxRetryAfter` or past the deadline
 * gives up at once, as does a backoff that cannot fit before the deadline;
 * the stale keep-alive race retries at once.
 */
export function decide(verdict: AttemptVerdict, input: DecisionInput): Decision {
  if (verdict.scope === 'never') return DONE;
  if (verdict.scope === 'replayable' && !input.replayable) return giveUp('not-replayable');
  if (!input.resendable()) return giveUp('body-not-replayable');
  if (input.attempt >= input.attempts) return giveUp('attempts');
  const { hint, timeLeft } = input;
  if (hint !== undefined) {
    if (hint > input.maxRetryAfter) return giveUp('retry-after', hint);
    if (hint >= timeLeft) return giveUp('deadline', hint);
    // The spread never carries the wait to the deadline; the hint itself fits (checked above).
    const delay = Math.max(hint, Math.min(hint + hintSpread(hint, input.random), timeLeft - 1));
    const source = input.hintSource ?? 'retry-after';
    return { action: 'retry', delay, source, charged: verdict.inFlight !== true };
  }
  // The stale keep-alive race goes again at once, but not past the deadline.
  const stale = verdict.stale && verdict.reason === 'maybe-sent';
  let delay = stale ? 0 : Math.max(0, input.backoff());
  if (!Number.isFinite(delay)) delay = 0;
  if (delay >= timeLeft) return giveUp('deadline', delay);
  return {
    action: 'retry',
    delay,
    source: 'backoff',
    charged: !verdict.stale && verdict.inFlight !== true,
  };
}

/** What follows `lesson`, the attempt of `ctx` that just ended: {@link decide} on what `ctx` says. */
export function decideNext(ctx: RetryContext, lesson: Lesson): Decision {
  const { request, exchange, attempt, previousDelay, setup } = ctx;
  const { pacing } = lesson;
  const { retry } = request;
  return decide(lesson, {
    replayable: request.replayable,
    resendable: () => exchange.resendable(lesson.reason === 'unsent'),
    attempt,
    attempts: retry.attempts,
    timeLeft: ctx.deadline - lesson.done,
    hint: pacing?.delay,
    hintSource: pacing?.source,
    maxRetryAfter: retry.maxRetryAfter,
    backoff: () => retry.backoff(attempt, previousDelay, setup.random),
    random: setup.random,
  });
}
