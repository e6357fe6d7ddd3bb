/**
 * What one strategy's run leaves behind, in the same form whether it ran in
 * virtual time or on a real server: per logical request its start, end and
 * outcome; per attempt that reached the upstream its arrival time, status
 * and attempt number. Times are ms from the start of the run.
 */

/** The raw record of one strategy's run. */
export interface RunTrace {
  /** Per logical request: when it was issued. */
  readonly start: ArrayLike<number>;
  /** Per logical request: when it settled (success or not). */
  readonly end: ArrayLike<number>;
  /** Per logical request: 1 if it got an answer (a 2xx, or a 4xx other than 408/429: `isAnswer`), else 0. */
  readonly ok: ArrayLike<number>;
  /** Per attempt that reached the upstream, in arrival order: arrival time. */
  readonly arrivals: ArrayLike<number>;
  /** Per attempt: the upstream's status. */
  readonly statuses: ArrayLike<number>;
  /** Per attempt: its number within its logical request (1 = first). */
  readonly attempts: ArrayLike<number>;
  /** Why requests ended without success: counts of `giveUp` reasons (and error codes without one). */
  readonly outcomes: Readonly<Record<string, number>>;
  /**
   * ms of service the upstream spent (one core at full speed), aborted
   * requests counted up to when the server saw the abort; absent when the
   * runner could not tell.
   */
  readonly work?: number | undefined;
}

/** A growable trace, filled while a run goes. */
export class TraceRecorder implements RunTrace {
  readonly start: number[];
  readonly end: number[];
  readonly ok: number[];
  readonly arrivals: number[] = [];
  readonly statuses: number[] = [];
  readonly attempts: number[] = [];
  readonly outcomes: Record<string, number> = {};
  /** Logical requests settled so far. */
  settled = 0;
  /** See {@link RunTrace.work}. */
  work: number | undefined;

  /** @param requests logical requests known in advance (open loop); a closed loop adds them with `begin`. */
  constructor(requests: number) {
    this.start = new Array<number>(requests).fill(0);
    this.end = new Array<number>(requests).fill(0);
    this.ok = new Array<number>(requests).fill(0);
  }

  /** A new logical request issued at `t` (closed loop); returns its index. */
  begin(t: number): number {
    this.start.push(t);
    this.end.push(0);
    this.ok.push(0);
    return this.start.length - 1;
  }

  /** An attempt reached the upstream at `t` and got `status`. */
  attempt(t: number, status: number, attempt: number): void {
    this.arrivals.push(t);
    this.statuses.push(status);
    this.attempts.push(attempt);
  }

  /** Logical request `i` settled at `t`. */
  settle(i: number, t: number, ok: boolean): void {
    this.end[i] = t;
    this.ok[i] = ok ? 1 : 0;
    this.settled++;
  }

  /** A request ended without success, for `reason` (a `giveUp` reason or an error code). */
  outcome(reason: string): void {
    this.outcomes[reason] = (this.outcomes[reason] ?? 0) + 1;
  }
}
