/**
 * The theoretical optimum of a scenario: the most logical requests that any
 * client behaviour could complete within their deadlines, given the
 * upstream's capacity. An omniscient client is never refused (it sends each
 * request exactly when a token is there), so refusals cost it nothing; it
 * waits out outages; it retries a random failure at once.
 *
 * Every request has the same relative deadline, so serving them in arrival
 * order (earliest deadline first) and skipping those that can no longer make
 * it is optimal (the classic exchange argument for unit jobs with release
 * times and a common relative deadline). With a random failure rate p, each
 * success costs 1 / (1 − p) tokens on average and a request fails only if
 * all its attempts do (pᴬ): the optimum is then an expected value.
 */
import type { Outage, ServerOptions } from './server-model.js';

/** The optimum of a scenario. */
export interface Optimum {
  /** Share of the logical requests that can succeed within the deadline, in [0, 1]. */
  readonly success: number;
  /** How many that is. */
  readonly successes: number;
  /**
   * The window during which demand exceeds capacity: from the first to the
   * last request of the optimal schedule that had to wait for a token (not
   * for an outage to end), ms from the start; `null` when none did.
   */
  readonly saturated: readonly [number, number] | null;
}

/** The parameters the optimum depends on. */
export interface OptimumInput {
  /** Arrival times of the logical requests, ms, sorted. */
  readonly arrivals: ArrayLike<number>;
  readonly server: ServerOptions;
  /** Round trip, ms. */
  readonly rtt: number;
  /** Deadline of each request, ms. */
  readonly deadline: number;
  /** Attempt cap per request. */
  readonly attempts: number;
}

/** After `t`, the first instant outside every outage window. */
function afterOutages(outages: readonly Outage[], t: number): number {
  let moved = true;
  while (moved) {
    moved = false;
    for (const w of outages) {
      if (t >= w.start && t < w.end) {
        t = w.end;
        moved = true;
      }
    }
  }
  return t;
}

/** Computes the optimum of a scenario (see the module's comment for the model). */
export function optimum(input: OptimumInput): Optimum {
  const { arrivals, server, rtt, deadline, attempts } = input;
  const rate = server.capacity / 1000;
  const p = server.failureRate;
  const cost = p >= 1 ? Number.POSITIVE_INFINITY : 1 / (1 - p);
  let tokens = server.burst;
  let at = 0;
  let served = 0;
  let from = Number.NaN;
  let to = Number.NaN;
  for (let i = 0; i < arrivals.length; i++) {
    const ready = arrivals[i]! + rtt / 2;
    // The response must be back before the deadline.
    const latest = arrivals[i]! + deadline - rtt / 2 - server.serviceTime;
    if (!Number.isFinite(cost)) break;
    let t = Math.max(ready, at);
    let have = Math.min(server.burst, tokens + (t - at) * rate);
    const short = have < cost;
    if (short) {
      t += (cost - have) / rate;
      have = cost;
    }
    const open = afterOutages(server.outages, t);
    if (open > t) {
      have = Math.min(server.burst, have + (open - t) * rate);
      t = open;
    }
    if (t > latest) continue;
    if (short) {
      if (Number.isNaN(from)) from = t;
      to = t;
    }
    tokens = have - cost;
    at = t;
    served++;
  }
  const successes = served * (1 - p ** attempts);
  const n = arrivals.length;
  return {
    success: n === 0 ? 1 : successes / n,
    successes,
    saturated: Number.isNaN(from) || to - from < 1 ? null : [from, to],
  };
}
