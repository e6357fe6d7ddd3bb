/**
 * What the executor's parts share: how an attempt ended, what it taught, the
 * executor's settings, and the hand-off types of an adapter that sends
 * attempt 1 itself. Types only.
 */
import type { StaunchListeners } from '../events.js';
import type { Clock, Random } from '../internal/clock.js';
import type { Policies } from '../policy/policies.js';
import type { StatusClassifier } from '../retry/classify.js';
import type { AttemptVerdict } from '../retry/decide.js';
import type { PacingReader, ResponsePacing, ServerPacing } from '../retry/server-delay.js';

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

/** The executor's settings, resolved once, as its parts read them. */
export interface Setup {
  readonly clock: Clock;
  readonly random: Random;
  readonly on: StaunchListeners;
  /** `undefined` when every policy is off. */
  readonly policies: Policies | undefined;
  readonly classify: StatusClassifier | undefined;
  readonly pacing: ResponsePacing;
}

/** How one attempt ended: a response (and how to unlink the caller's signal from it), or a failure. */
export type Outcome<R> =
  | { ok: true; response: R; unlink: () => void }
  | { ok: false; error: unknown };

/** What an attempt that is not handed back taught: how to go on. */
export interface Lesson {
  readonly verdict: AttemptVerdict;
  readonly status: number | undefined;
  readonly code: string | undefined;
  /** What kind of refusal a classifier saw (`llm()`: `requests`, `tokens`, a quota code…). */
  readonly kind: string | undefined;
  readonly pacing: ServerPacing | undefined;
  /** Clock time the attempt ended. */
  readonly done: number;
}

/** An attempt that failed, or answered a status the retry table reads. */
export interface Failure<R> {
  readonly outcome: Outcome<R>;
  readonly lesson: Lesson;
}

/** Where a logical request that an adapter started with `Executor.first` ends: once, one of the two. */
export interface FirstSink<R> {
  resolve(response: R): void;
  reject(error: unknown): void;
}

/**
 * Attempt 1 admitted for an adapter to send itself (`Executor.first`): it
 * must settle within `limit` ms (the attempt's deadline, which the adapter
 * arms; `Infinity` for none), then be handed to `Executor.firstDone`.
 */
export interface FirstTicket {
  readonly limit: number;
}
