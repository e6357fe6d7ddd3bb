/**
 * The upstream of the lab, as a pure model shared by the simulator and the
 * live server: capacity as a quota (a token bucket, or a fixed window as
 * many APIs count), a service time, an optional queue, refusals that cost
 * capacity, outage windows, random failures, and sporadic 429s that do not
 * depend on the rate (a throttle signal that is not a quota).
 * Times are ms from the start of the run.
 */
import type { Random } from '../internal/clock.js';

/** How a refusal tells the client when to come back. */
export type RetryAfterMode = 'none' | 'seconds' | 'ms';
/** How the upstream counts its capacity. */
export type QuotaKind = 'token-bucket' | 'fixed-window';
/**
 * 429s that are not about the rate: `alternate` answers every other
 * attempt `429 Retry-After: 0` and the others 404; `random` answers
 * `429 Retry-After: 0` with probability `sporadicRate`, else as the quota decides.
 */
export type SporadicMode = 'none' | 'alternate' | 'random';

/** A window during which every request is answered 503 at once. ms from the run's start, `end` exclusive. */
export interface Outage {
  readonly start: number;
  readonly end: number;
}

/** The upstream's settings. */
export interface ServerOptions {
  /** Requests per second the upstream can serve (a fixed window allows `capacity × window / 1000` per window). */
  readonly capacity: number;
  /** Tokens the bucket holds: requests that may start at once after a quiet spell (token bucket). */
  readonly burst: number;
  /** ms between a request's start of service and its response. */
  readonly serviceTime: number;
  /** Requests that may wait for a token instead of being refused; 0 = no queue (token bucket). */
  readonly queue: number;
  /** `Retry-After` on a 429: none, whole seconds, or `retry-after-ms`. */
  readonly retryAfter: RetryAfterMode;
  /** Share of one request's capacity that refusing one request consumes (token bucket). */
  readonly rejectCost: number;
  /** Windows answering 503. */
  readonly outages: readonly Outage[];
  /** Probability that a served request fails with 503 (no `Retry-After`). */
  readonly failureRate: number;
  /** @default 'token-bucket' */
  readonly quota?: QuotaKind | undefined;
  /** Fixed window: its length, ms; the counter resets at each multiple of it. @default 1000 */
  readonly window?: number | undefined;
  /** @default 'none' */
  readonly sporadic?: SporadicMode | undefined;
  /** `sporadic: 'random'`: the probability of a 429. @default 0 */
  readonly sporadicRate?: number | undefined;
  /** Probability that a served request is a slow one, taking `tailFactor` × `serviceTime`. @default 0 */
  readonly tailRate?: number | undefined;
  /** How many times the service time a slow request takes. @default 20 */
  readonly tailFactor?: number | undefined;
  /**
   * 0: every request gets its own service time, however many are in service.
   * Above 0: the requests in service share `cores` cores (processor sharing,
   * sharing.ts): past `cores` at once, each of them slows down. @default 0
   */
  readonly cores?: number | undefined;
}

/** What the upstream does with one request. */
export interface ServerVerdict {
  /** 200, 404 (sporadic: alternate), 429 (over quota, sporadic) or 503 (outage, random failure). */
  readonly status: number;
  /**
   * ms between the request's arrival and its response leaving the server;
   * with `cores` (processor sharing), between its arrival and its start of
   * service, the sharing deciding the rest.
   */
  readonly delay: number;
  /** A served request: its service demand, ms of one core at full speed (the tail's included). */
  readonly work?: number;
  /** On a 429 over quota with a `Retry-After` mode: the wait to announce, in ms. */
  readonly retryAfter?: number;
  /** Headers the model sends as they are (rate-limit counters, `Retry-After: 0`). */
  readonly headers?: Readonly<Record<string, string>>;
}

const OUTAGE: ServerVerdict = Object.freeze({ status: 503, delay: 0 });
const REFUSED: ServerVerdict = Object.freeze({ status: 429, delay: 0 });
const NOW: Readonly<Record<string, string>> = Object.freeze({ 'retry-after': '0' });
const SPORADIC: ServerVerdict = Object.freeze({ status: 429, delay: 0, headers: NOW });

/**
 * The upstream's state. Token bucket (the default): refilled at `capacity`
 * per second up to `burst`. A request takes a token and is served; without
 * a token it waits in the queue if there is room (reserving the next token),
 * else it is refused with 429 and the refusal takes `rejectCost` of a token.
 * The bucket can owe at most one second of capacity to refusals (plus what
 * the queue has reserved): a server stormed by refusals serves nothing until
 * the storm abates, then pays that debt back within a second.
 * Fixed window: see {@link FixedWindow}.
 */
export class ServerModel {
  readonly #o: ServerOptions;
  readonly #random: Random;
  readonly #window: FixedWindow | undefined;
  #tokens: number;
  #at = 0;
  #arrivals = 0;
  /** Start times of queued requests, in order. */
  readonly #queued: number[] = [];
  #queueHead = 0;

  constructor(options: ServerOptions, random: Random) {
    this.#o = options;
    this.#random = random;
    this.#tokens = options.burst;
    this.#window =
      options.quota === 'fixed-window'
        ? new FixedWindow(options.window ?? 1000, options.capacity)
        : undefined;
  }

  /** Decides what happens to a request arriving at `t` (ms; calls must come in time order). */
  arrive(t: number): ServerVerdict {
    const o = this.#o;
    if (inOutage(o.outages, t)) return OUTAGE;
    const n = this.#arrivals++;
    if (o.sporadic === 'alternate') {
      return n % 2 === 1 ? SPORADIC : { status: 404, delay: o.serviceTime, work: o.serviceTime };
    }
    if (o.sporadic === 'random' && this.#random() < (o.sporadicRate ?? 0)) return SPORADIC;
    if (this.#window !== undefined) {
      const verdict = this.#window.arrive(t, o.retryAfter !== 'none');
      if (verdict.status !== 200) return verdict;
      return this.#served(t, t, verdict.headers);
    }
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
    return this.#served(t, start, undefined);
  }

  #served(t: number, start: number, headers: ServerVerdict['headers']): ServerVerdict {
    const o = this.#o;
    const failed = o.failureRate > 0 && this.#random() < o.failureRate;
    const tail = (o.tailRate ?? 0) > 0 && this.#random() < o.tailRate!;
    const work = tail ? o.serviceTime * (o.tailFactor ?? 20) : o.serviceTime;
    const delay = start - t + ((o.cores ?? 0) > 0 ? 0 : work);
    const status = failed ? 503 : 200;
    return headers === undefined ? { status, delay, work } : { status, delay, work, headers };
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

/**
 * A fixed-window quota, as many APIs count: `limit = capacity × window / 1000`
 * requests per window, the counter reset at each multiple of `window` ms.
 * Over the limit: 429, with `Retry-After` = the time to the window's end
 * when hints are on. Every answer carries the counters real APIs send:
 * `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset` (seconds to
 * the reset) and their `X-RateLimit-*` twins. Refusals cost nothing: the
 * gateway only compares a counter.
 */
export class FixedWindow {
  readonly #window: number;
  readonly #limit: number;
  #index = -1;
  #used = 0;

  constructor(window: number, capacity: number) {
    this.#window = window;
    this.#limit = Math.max(1, Math.floor((capacity * window) / 1000));
  }

  /** The verdict at `t` (200 = admitted: the caller adds the service time). */
  arrive(t: number, hint: boolean): ServerVerdict {
    const index = Math.floor(t / this.#window);
    if (index !== this.#index) {
      this.#index = index;
      this.#used = 0;
    }
    const left = (index + 1) * this.#window - t;
    const reset = String(Math.max(1, Math.ceil(left / 1000)));
    if (this.#used >= this.#limit) {
      const headers = this.#headers(0, reset);
      return hint
        ? { status: 429, delay: 0, retryAfter: left, headers }
        : { status: 429, delay: 0, headers };
    }
    this.#used++;
    return { status: 200, delay: 0, headers: this.#headers(this.#limit - this.#used, reset) };
  }

  #headers(remaining: number, reset: string): Record<string, string> {
    const limit = String(this.#limit);
    const left = String(remaining);
    return {
      'ratelimit-limit': limit,
      'ratelimit-remaining': left,
      'ratelimit-reset': reset,
      'x-ratelimit-limit': limit,
      'x-ratelimit-remaining': left,
      'x-ratelimit-reset': reset,
    };
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

const EMPTY: Readonly<Record<string, string>> = Object.freeze({});

/** Every header of `verdict`'s response: the model's own, then the `Retry-After` of `mode`. */
export function responseHeaders(
  mode: RetryAfterMode,
  verdict: ServerVerdict,
): Readonly<Record<string, string>> {
  if (verdict.retryAfter === undefined || mode === 'none') return verdict.headers ?? EMPTY;
  return { ...verdict.headers, ...retryAfterHeaders(mode, verdict) };
}

/** Headers that carry server pacing: what a pure retry loop never sees (see strategies.ts). */
export const PACING_HEADERS: readonly string[] = Object.freeze([
  'retry-after',
  'retry-after-ms',
  'ratelimit',
  'ratelimit-policy',
  'ratelimit-limit',
  'ratelimit-remaining',
  'ratelimit-reset',
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
]);

/** A 2xx, or a 4xx other than 408 and 429: the upstream answered the request (a 404 is an answer). */
export function isAnswer(status: number): boolean {
  if (status >= 200 && status < 300) return true;
  return status >= 400 && status < 500 && status !== 408 && status !== 429;
}
