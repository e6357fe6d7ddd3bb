/**
 * The upstream of the lab, as a pure model shared by the simulator and the
 * live server: capacity as a token bucket, a service time, an optional
 * queue, refusals that cost capacity, outage windows and random failures.
 * Times are ms from the start of the run.
 */
import type { Random } from '../internal/clock.js';

/** How a refusal tells the client when to come back. */
export type RetryAfterMode = 'none' | 'seconds' | 'ms';

/** A window during which every request is answered 503 at once. ms from the run's start, `end` exclusive. */
export interface Outage {
  readonly start: number;
  readonly end: number;
}

/** The upstream's settings. */
export interface ServerOptions {
  /** Requests per second the upstream can serve. */
  readonly capacity: number;
  /** Tokens the bucket holds: requests that may start at once after a quiet spell. */
  readonly burst: number;
  /** ms between a request's start of service and its response. */
  readonly serviceTime: number;
  /** Requests that may wait for a token instead of being refused; 0 = no queue. */
  readonly queue: number;
  /** `Retry-After` on a 429: none, whole seconds, or `retry-after-ms`. */
  readonly retryAfter: RetryAfterMode;
  /** Share of one request's capacity that refusing one request consumes. */
  readonly rejectCost: number;
  /** Windows answering 503. */
  readonly outages: readonly Outage[];
  /** Probability that a served request fails with 503 (no `Retry-After`). */
  readonly failureRate: number;
}

/** What the upstream does with one request. */
export interface ServerVerdict {
  /** 200, 429 (over capacity) or 503 (outage, random failure). */
  readonly status: number;
  /** ms between the request's arrival and its response leaving the server. */
  readonly delay: number;
  /** On a 429 with a `Retry-After` mode: the wait to announce, in ms. */
  readonly retryAfter?: number;
}

const OUTAGE: ServerVerdict = Object.freeze({ status: 503, delay: 0 });
const REFUSED: ServerVerdict = Object.freeze({ status: 429, delay: 0 });

/**
 * The upstream's state: a token bucket refilled at `capacity` per second up
 * to `burst`. A request takes a token and is served; without a token it
 * waits in the queue if there is room (reserving the next token), else it is
 * refused with 429 and the refusal takes `rejectCost` of a token. The bucket
 * can owe at most one second of capacity to refusals (plus what the queue has
 * reserved): a server stormed by refusals serves nothing until the storm
 * abates, then pays that debt back within a second.
 */
export class ServerModel {
  readonly #o: ServerOptions;
  readonly #random: Random;
  #tokens: number;
  #at = 0;
  /** Start times of queued requests, in order. */
  readonly #queued: number[] = [];
  #queueHead = 0;

  constructor(options: ServerOptions, random: Random) {
    this.#o = options;
    this.#random = random;
    this.#tokens = options.burst;
  }

  /** Decides what happens to a request arriving at `t` (ms; calls must come in time order). */
  arrive(t: number): ServerVerdict {
    const o = this.#o;
    if (inOutage(o.outages, t)) return OUTAGE;
    this.#settle(t);
    let start = t;
    if (this.#tokens >= 1) {
      this.#tokens -= 1;
    } else if (this.#waiting(t) < o.queue) {
      start = t + ((1 - this.#tokens) * 1000) / o.capacity;
      this.#tokens -= 1;
      this.#queued.push(start);
    } else {
      const floor = -o.capacity - (this.#queued.length - this.#queueHead);
      this.#tokens = Math.max(floor, this.#tokens - o.rejectCost);
      if (o.retryAfter === 'none') return REFUSED;
      const wait = (Math.max(0, 1 - this.#tokens) * 1000) / o.capacity;
      return { status: 429, delay: 0, retryAfter: wait };
    }
    const failed = o.failureRate > 0 && this.#random() < o.failureRate;
    return { status: failed ? 503 : 200, delay: start - t + o.serviceTime };
  }

  #settle(t: number): void {
    if (t <= this.#at) return;
    const o = this.#o;
    this.#tokens = Math.min(o.burst, this.#tokens + ((t - this.#at) * o.capacity) / 1000);
    this.#at = t;
  }

  /** Requests still waiting for their token at `t`. */
  #waiting(t: number): number {
    const q = this.#queued;
    while (this.#queueHead < q.length && q[this.#queueHead]! <= t) this.#queueHead++;
    if (this.#queueHead > 1024 && this.#queueHead * 2 > q.length) {
      q.splice(0, this.#queueHead);
      this.#queueHead = 0;
    }
    return q.length - this.#queueHead;
  }
}

/** Whether `t` falls in one of the outage windows. */
export function inOutage(outages: readonly Outage[], t: number): boolean {
  for (const w of outages) if (t >= w.start && t < w.end) return true;
  return false;
}

/** The response headers that announce `verdict.retryAfter` in `mode`. */
export function retryAfterHeaders(
  mode: RetryAfterMode,
  verdict: ServerVerdict,
): Record<string, string> {
  const wait = verdict.retryAfter;
  if (wait === undefined || mode === 'none') return {};
  if (mode === 'ms') return { 'retry-after-ms': String(Math.max(1, Math.ceil(wait))) };
  return { 'retry-after': String(Math.max(1, Math.ceil(wait / 1000))) };
}
