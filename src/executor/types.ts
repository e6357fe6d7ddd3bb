/** What the executor's parts share: its settings, an attempt that left, what it taught. Types only. */
import type { DeadlineScope } from '../errors.js';
import type { ExecutorOptions } from '../options.js';
import type { Gate } from '../policy/gate.js';
import type { LatencyTracker } from '../policy/hedge/latency.js';
import type { Outcome } from '../request.js';
import type { AttemptVerdict } from '../retry/decide.js';
import type { ResponsePacing, ServerPacing } from '../retry/server-delay.js';

/** The executor's settings as its parts read them (`policies`: none when all are off). */
export interface Setup extends Readonly<Omit<ExecutorOptions, 'pacing'>> {
  readonly pacing: ResponsePacing;
  /** Time to headers of successes per key, for `hedge.delay: 'auto'`. */
  readonly latency: LatencyTracker;
}

/**
 * An attempt that left: the flight's own attempt under way, or a hedge beside
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

/** What an attempt that is not handed back taught: the retry table's verdict, and how to go on. */
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

/** An attempt that failed, or answered a status the retry table reads. */
export interface Failure<R> {
  readonly outcome: Outcome<R>;
  readonly lesson: Lesson;
}
