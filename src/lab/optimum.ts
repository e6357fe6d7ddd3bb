/**
 * The theoretical optimum of a scenario: the most logical requests that any
 * client behaviour could complete within their deadlines, given the
 * upstream's capacity, and the goodput that takes. An omniscient client is
 * never refused by the quota (it sends each request exactly when the quota
 * has room), so refusals cost it nothing; it waits out outages; it retries
 * a random failure, and a 429 that is not about the rate, at once.
 *
 * Open loop: every request has the same relative deadline, so serving them
 * in arrival order (earliest deadline first) and skipping those that can no
 * longer make it is optimal (the classic exchange argument for unit jobs
 * with release times and a common relative deadline). Closed loop: each
 * client sends its next request the moment the previous one is answered;
 * the ideal client's requests wait only for the quota, so walking the
 * clients in order of when they are free gives the most answers.
 * With a random failure rate p, each success costs 1 / (1 − p) of the quota
 * on average and a request fails only if all its attempts do (pᴬ): the
 * optimum is then an expected value.
 */
import type { Outage, ServerOptions } from './server-model.js';

/** The optimum of a scenario. */
export interface Optimum {
  /** Share of the logical requests that can succeed within the deadline, in [0, 1]. */
  readonly success: number;
  /** How many that is. */
  readonly successes: number;
  /**
   * Open loop: the window during which demand exceeds capacity: from the
   * first to the last request of the optimal schedule that had to wait for
   * the quota (not for an outage to end), ms from the start; `null` when none did.
   */
  readonly saturated: readonly [number, number] | null;
  /** Logical requests of the ideal run (closed loop: as many as the ideal client sends). */
  readonly requests: number;
  /** When the ideal run's last answer is back, ms from the start. */
  readonly finish: number;
  /** Ideal answers by the time each is back, ms, sorted (expected counts in `weights`). */
  readonly completions: Float64Array;
  /** The expected success of each completion (1 without random failures). */
  readonly weight: number;
}

/** The parameters the optimum depends on. */
export interface OptimumInput {
  /** Arrival times of the logical requests, ms, sorted (ignored by a closed loop). */
  readonly arrivals: ArrayLike<number>;
  readonly server: ServerOptions;
  /** Round trip, ms. */
  readonly rtt: number;
  /** Deadline of each request, ms. */
  readonly deadline: number;
  /** Attempt cap per request. */
  readonly attempts: number;
  /** Closed loop: clients sending back to back (absent or 0: open loop). */
  readonly concurrency?: number | undefined;
  /** Closed loop: no request starts at or after this, ms. */
  readonly span?: number | undefined;
  /** Closed loop: at most this many requests. */
  readonly requests?: number | undefined;
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

/** The upstream's quota as the ideal client sees it: when it has room, and taking it. */
interface Quota {
  /** The earliest instant ≥ t at which `cost` of the quota is free. */
  next(t: number): number;
  take(t: number): void;
}

function tokenBucket(server: ServerOptions, cost: number): Quota {
  const rate = server.capacity / 1000;
  let tokens = server.burst;
  let at = 0;
  const have = (t: number) => Math.min(server.burst, tokens + (t - at) * rate);
  return {
    next: (t) => {
      const h = have(t);
      return h >= cost ? t : t + (cost - h) / rate;
    },
    take: (t) => {
      tokens = have(t) - cost;
      at = t;
    },
  };
}

function fixedWindow(server: ServerOptions, cost: number): Quota {
  const w = server.window ?? 1000;
  const limit = Math.max(1, Math.floor((server.capacity * w) / 1000));
  let index = -1;
  let used = 0;
  const usedAt = (k: number) => (k === index ? used : 0);
  return {
    next: (t) => {
      // A window before the one in use is over: the ideal client has moved on from it.
      let k = Math.max(Math.floor(t / w), index);
      while (usedAt(k) + cost > limit) k++;
      return Math.max(t, k * w);
    },
    take: (t) => {
      const k = Math.floor(t / w);
      used = usedAt(k) + cost;
      index = k;
    },
  };
}

/** Computes the optimum of a scenario (see the module's comment for the model). */
export function optimum(input: OptimumInput): Optimum {
  const { server, rtt, deadline, attempts } = input;
  const p = server.failureRate;
  const cost = p >= 1 ? Number.POSITIVE_INFINITY : 1 / (1 - p);
  const weight = 1 - p ** attempts;
  const quota =
    server.quota === 'fixed-window' ? fixedWindow(server, cost) : tokenBucket(server, cost);
  // A 429 that is not about the rate costs the ideal client a round trip, never the quota.
  const q = server.sporadic === 'random' ? (server.sporadicRate ?? 0) : 0;
  const extraTrips = q >= 1 ? Number.POSITIVE_INFINITY : q / (1 - q);
  let counter = 0;
  const completions: number[] = [];
  let from = Number.NaN;
  let to = Number.NaN;

  /** Serves one request issued at `issued`; returns when it is answered, or NaN if it cannot be. */
  const serve = (issued: number): number => {
    let ready = issued + rtt / 2 + extraTrips * rtt;
    if (server.sporadic === 'alternate' && counter % 2 === 1) {
      counter++;
      ready += rtt;
    }
    const latest = issued + deadline - rtt / 2 - server.serviceTime;
    if (!Number.isFinite(cost) || !Number.isFinite(ready)) return Number.NaN;
    let t = ready;
    let short = false;
    for (;;) {
      const slot = quota.next(t);
      if (slot > t) short = true;
      const open = afterOutages(server.outages, slot);
      if (open === slot) {
        t = slot;
        break;
      }
      t = open;
    }
    if (t > latest) return Number.NaN;
    if (short) {
      if (Number.isNaN(from)) from = t;
      to = t;
    }
    quota.take(t);
    counter++;
    const back = t + server.serviceTime + rtt / 2;
    completions.push(back);
    return back;
  };

  let requests = 0;
  const k = input.concurrency ?? 0;
  if (k > 0) {
    const span = input.span ?? Number.POSITIVE_INFINITY;
    const cap = input.requests ?? Number.POSITIVE_INFINITY;
    const free = new Float64Array(k);
    while (requests < cap) {
      let w = 0;
      for (let i = 1; i < k; i++) if (free[i]! < free[w]!) w = i;
      const issued = free[w]!;
      if (issued >= span) break;
      requests++;
      const back = serve(issued);
      // A request that cannot make its deadline is given up at once by the ideal client.
      free[w] = Number.isNaN(back) ? issued + Math.max(rtt, 1) : back;
    }
  } else {
    for (let i = 0; i < input.arrivals.length; i++) serve(input.arrivals[i]!);
    requests = input.arrivals.length;
  }
  const sorted = Float64Array.from(completions).sort();
  const successes = completions.length * weight;
  return {
    success: requests === 0 ? 1 : successes / requests,
    successes,
    saturated: Number.isNaN(from) || to - from < 1 ? null : [from, to],
    requests,
    finish: sorted.length === 0 ? 0 : sorted[sorted.length - 1]!,
    completions: sorted,
    weight,
  };
}

/** Expected ideal answers back within `[from, to)` ms. */
export function completedWithin(o: Optimum, from: number, to: number): number {
  let n = 0;
  for (const t of o.completions) if (t >= from && t < to) n++;
  return n * o.weight;
}
