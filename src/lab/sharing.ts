/**
 * An upstream that slows under load: `cores` processor sharing (the
 * M/G/c-PS queue of queueing theory). Every request in service progresses at
 * the same rate, `min(1, cores / n)` of full speed with `n` requests in
 * service: up to `cores` requests each take their own service time; past
 * that, every one of them takes longer, in proportion to the crowd. Nothing
 * is refused and nothing waits in a line: the server just gets slower for
 * everyone, which is how a CPU-bound service behaves.
 *
 * A request the client aborts leaves service the moment the server sees it
 * (the runners call {@link SharedService.leave}): the work it got until then
 * is spent, the rest is not. `work` counts what the server spent, in ms of
 * one core at full speed.
 *
 * The bookkeeping is by virtual work: `#virtual` is the service each request
 * present since the start would have received, so a request that entered at
 * virtual `v` with demand `d` is done when `#virtual` reaches `v + d`, and the
 * next departure is the smallest such finish. Pure but for `schedule`, which
 * the simulator maps to its virtual clock and the live server to `setTimeout`.
 */

/** One request in service. */
export interface SharedJob {
  /** Virtual work at which it is done. */
  readonly finish: number;
  /** Called once, when its service is complete (never after `leave`). */
  readonly done: () => void;
  /** Left (aborted) or done: skipped when it reaches the heap's top. */
  gone: boolean;
}

/** Calls `fn` at `t` (ms from the run's start, never before the last call's `t`). */
export type Schedule = (t: number, fn: () => void) => void;

/** Relative slack for the float error of `#virtual`: a job this close to its finish is done. */
const EPSILON = 1e-9;

export class SharedService {
  readonly #cores: number;
  readonly #schedule: Schedule;
  /** Jobs in service, a binary min-heap on `finish` (gone ones included until they surface). */
  readonly #heap: SharedJob[] = [];
  #inService = 0;
  #virtual = 0;
  #at = 0;
  #work = 0;
  /** Bumped on every change: a departure timer of an older generation does nothing. */
  #generation = 0;

  constructor(cores: number, schedule: Schedule) {
    this.#cores = cores;
    this.#schedule = schedule;
  }

  /** ms of one core's full-speed work spent so far (up to the last event). */
  get work(): number {
    return this.#work;
  }

  /** Requests in service now. */
  get inService(): number {
    return this.#inService;
  }

  /** A request with `demand` ms of work enters service at `t`; `done` runs when it is served. */
  enter(t: number, demand: number, done: () => void): SharedJob {
    this.#advance(t);
    const job: SharedJob = { finish: this.#virtual + demand, done, gone: false };
    this.#push(job);
    this.#inService++;
    this.#reschedule(t);
    return job;
  }

  /** `job` leaves service at `t` unfinished (the server saw its client go); nothing if it is done. */
  leave(job: SharedJob, t: number): void {
    if (job.gone) return;
    this.#advance(t);
    job.gone = true;
    this.#inService--;
    this.#reschedule(t);
  }

  /** Each request's share of a core with `n` in service. */
  #rate(n: number): number {
    return n <= this.#cores ? 1 : this.#cores / n;
  }

  #advance(t: number): void {
    const dt = t - this.#at;
    if (dt <= 0) return;
    const n = this.#inService;
    this.#virtual += dt * this.#rate(n);
    this.#work += dt * Math.min(n, this.#cores);
    this.#at = t;
  }

  #reschedule(t: number): void {
    const generation = ++this.#generation;
    const top = this.#top();
    if (top === undefined) return;
    const due = t + Math.max(0, top.finish - this.#virtual) / this.#rate(this.#inService);
    this.#schedule(due, () => {
      if (generation === this.#generation) this.#depart(due);
    });
  }

  #depart(t: number): void {
    this.#advance(t);
    const served: SharedJob[] = [];
    // The timer was for the top job: it is done whatever the float error left of its work.
    const slack = Math.max(this.#top()?.finish ?? 0, this.#virtual) - this.#virtual;
    for (let top = this.#top(); top !== undefined; top = this.#top()) {
      if (top.finish > this.#virtual + slack + EPSILON * Math.max(1, this.#virtual)) break;
      this.#pop();
      top.gone = true;
      this.#inService--;
      served.push(top);
    }
    this.#reschedule(t);
    for (const job of served) job.done();
  }

  /** The unfinished job due first, gone ones dropped on the way. */
  #top(): SharedJob | undefined {
    while (this.#heap.length > 0 && this.#heap[0]!.gone) this.#pop();
    return this.#heap[0];
  }

  #push(job: SharedJob): void {
    const h = this.#heap;
    let i = h.push(job) - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (h[parent]!.finish <= job.finish) break;
      h[i] = h[parent]!;
      i = parent;
    }
    h[i] = job;
  }

  #pop(): void {
    const h = this.#heap;
    const last = h.pop()!;
    if (h.length === 0) return;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= h.length) break;
      const r = l + 1;
      const c = r < h.length && h[r]!.finish < h[l]!.finish ? r : l;
      if (h[c]!.finish >= last.finish) break;
      h[i] = h[c]!;
      i = c;
    }
    h[i] = last;
  }
}
