/** What the executor's parts share: its settings, an attempt that failed. Types only. */
import type { ExecutorOptions } from '../options.js';
import type { LatencyTracker } from '../policy/hedge/latency.js';
import type { Outcome } from '../request.js';
import type { Lesson } from '../retry/decide.js';
import type { ResponsePacing } from '../retry/server-delay.js';

/** The executor's settings as its parts read them (`policies`: none when all are off). */
export interface Setup extends Readonly<Omit<ExecutorOptions, 'pacing'>> {
  readonly pacing: ResponsePacing;
  /** Time to headers of successes per key, for `hedge.delay: 'auto'`. */
  readonly latency: LatencyTracker;
}

/** An attempt that failed, or answered a status the retry table reads. */
export interface Failure<R> {
  readonly outcome: Outcome<R>;
  readonly lesson: Lesson;
}
