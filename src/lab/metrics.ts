/**
 * Metrics of one strategy's run, computed from its trace alone (pure, so a
 * small hand-made trace checks every formula). Times in ms, rates per second.
 */
import type { RunTrace } from './trace.js';

/** Where and how to measure. */
export interface MetricsContext {
  /** Deadline of each logical request, ms: a success after it does not count. */
  readonly deadline: number;
  /** The upstream's capacity, requests per second. */
  readonly capacity: number;
  /** ms window over which goodput is measured, `[from, to)`. */
  readonly window: readonly [number, number];
  /** End of the last outage, ms, when the scenario has one: recovery is measured from it. */
  readonly outageEnd?: number | undefined;
}

/** What one strategy did. */
export interface StrategyMetrics {
  readonly name: string;
  /** Logical requests that got a 2xx within their deadline, as a fraction. */
  readonly success: number;
  readonly successes: number;
  readonly requests: number;
  /** Latency of successful requests, ms (nearest rank); `null` without any success. */
  readonly p50: number | null;
  readonly p99: number | null;
  /**
   * Latency of every request, ms (nearest rank), a failure counted at the
   * time it failed: a strategy that fails fast does not look fast here.
   */
  readonly p50All: number | null;
  readonly p99All: number | null;
  /** Successes per second completed within the goodput window. */
  readonly goodput: number;
  /** Attempts that reached the upstream per logical request (load amplification). */
  readonly attemptsPerRequest: number;
  /** 429s the upstream sent. */
  readonly tooManyRequests: number;
  /**
   * Peak of retry arrivals per 10 ms bin over their mean per bin (from the
   * first retry to the last): how much retries synchronise. `null` with
   * fewer than `HERD_MIN_RETRIES` retries (too few to form a herd: a handful
   * of retries in one bin would read as an enormous peak).
   */
  readonly herdPeak: number | null;
  /**
   * ms from the end of the last outage until the upstream serves again: the
   * first t (in 100 ms steps) at which its 2xx in [t, t + 1 s) reach 90 % of
   * min(capacity, logical requests wanting service then: issued before t + 1 s
   * and not settled by t). `null` without an outage, or if it never recovered.
   */
  readonly recovery: number | null;
  /** Attempts that reached the upstream. */
  readonly serverArrivals: number;
  /** ms of the upstream's service per logical request (`RunTrace.work`); `null` when not measured. */
  readonly workPerRequest: number | null;
  /** Why requests failed (`giveUp` reasons). */
  readonly outcomes: Readonly<Record<string, number>>;
}

/** Bin width of `herdPeak`, ms. */
export const HERD_BIN_MS = 10;
/** Fewest retries for which `herdPeak` is reported. */
export const HERD_MIN_RETRIES = 100;

/** The `q`-quantile (0 < q ≤ 1) of sorted values, nearest rank. */
export function quantile(sorted: ArrayLike<number>, q: number): number | null {
  const n = sorted.length;
  if (n === 0) return null;
  return sorted[Math.min(n - 1, Math.max(0, Math.ceil(q * n) - 1))]!;
}

/** Latencies (ms) of the successful requests within the deadline, sorted. */
export function successLatencies(trace: RunTrace, deadline: number): Float64Array {
  const out: number[] = [];
  for (let i = 0; i < trace.start.length; i++) {
    const latency = trace.end[i]! - trace.start[i]!;
    if (trace.ok[i] === 1 && latency <= deadline) out.push(latency);
  }
  return Float64Array.from(out).sort();
}

/** Latencies (ms) of every logical request, successes and failures alike, sorted. */
export function allLatencies(trace: RunTrace): Float64Array {
  const out = new Float64Array(trace.start.length);
  for (let i = 0; i < out.length; i++) out[i] = trace.end[i]! - trace.start[i]!;
  return out.sort();
}

/** Peak over mean of retry arrivals per `HERD_BIN_MS` bin; `null` under `HERD_MIN_RETRIES` retries. */
export function herdPeak(trace: RunTrace): number | null {
  let first = Number.POSITIVE_INFINITY;
  let last = Number.NEGATIVE_INFINITY;
  let count = 0;
  for (let i = 0; i < trace.arrivals.length; i++) {
    if (trace.attempts[i]! < 2) continue;
    const t = trace.arrivals[i]!;
    if (t < first) first = t;
    if (t > last) last = t;
    count++;
  }
  if (count === 0 || count < HERD_MIN_RETRIES) return null;
  const bins = new Uint32Array(Math.floor((last - first) / HERD_BIN_MS) + 1);
  let peak = 0;
  for (let i = 0; i < trace.arrivals.length; i++) {
    if (trace.attempts[i]! < 2) continue;
    const b = Math.floor((trace.arrivals[i]! - first) / HERD_BIN_MS);
    const c = ++bins[b]!;
    if (c > peak) peak = c;
  }
  return peak / (count / bins.length);
}

/** Counts of sorted `times` below each `bound` (bounds ascending). */
function countBelow(times: ArrayLike<number>, bounds: number[], inclusive: boolean): number[] {
  const out: number[] = [];
  let k = 0;
  for (const b of bounds) {
    while (k < times.length && (inclusive ? times[k]! <= b : times[k]! < b)) k++;
    out.push(k);
  }
  return out;
}

/** See {@link StrategyMetrics.recovery}. Sweeps 100 ms steps up to the last arrival. */
export function recoveryTime(trace: RunTrace, outageEnd: number, capacity: number): number | null {
  let last = outageEnd;
  const served: number[] = [];
  for (let i = 0; i < trace.arrivals.length; i++) {
    const t = trace.arrivals[i]!;
    if (t > last) last = t;
    if (trace.statuses[i]! < 300) served.push(t);
  }
  const sorted = (values: ArrayLike<number>) => Float64Array.from(values).sort();
  const ok = sorted(served);
  const starts = sorted(trace.start);
  const ends = sorted(trace.end);
  const step = 100;
  const steps = Math.max(1, Math.ceil((last - outageEnd) / step));
  const from = Array.from({ length: steps }, (_, k) => outageEnd + k * step);
  const to = from.map((t) => t + 1000);
  const okFrom = countBelow(ok, from, false);
  const okTo = countBelow(ok, to, false);
  const issued = countBelow(starts, to, false);
  const settled = countBelow(ends, from, true);
  for (let k = 0; k < steps; k++) {
    // Requests wanting service in [t, t + 1 s): issued before its end, not settled by t.
    const want = 0.9 * Math.min(capacity, issued[k]! - settled[k]!);
    if (want > 0 && okTo[k]! - okFrom[k]! >= want) return k * step;
  }
  return null;
}

/** Computes every metric of `trace`. */
export function computeMetrics(
  name: string,
  trace: RunTrace,
  context: MetricsContext,
): StrategyMetrics {
  const requests = trace.start.length;
  const latencies = successLatencies(trace, context.deadline);
  const all = allLatencies(trace);
  const [from, to] = context.window;
  let inWindow = 0;
  for (let i = 0; i < requests; i++) {
    const end = trace.end[i]!;
    if (trace.ok[i] === 1 && end >= from && end < to && end - trace.start[i]! <= context.deadline)
      inWindow++;
  }
  let refused = 0;
  for (let i = 0; i < trace.statuses.length; i++) if (trace.statuses[i] === 429) refused++;
  return {
    name,
    success: requests === 0 ? 0 : latencies.length / requests,
    successes: latencies.length,
    requests,
    p50: quantile(latencies, 0.5),
    p99: quantile(latencies, 0.99),
    p50All: quantile(all, 0.5),
    p99All: quantile(all, 0.99),
    goodput: to > from ? inWindow / ((to - from) / 1000) : 0,
    attemptsPerRequest: requests === 0 ? 0 : trace.arrivals.length / requests,
    tooManyRequests: refused,
    herdPeak: herdPeak(trace),
    recovery:
      context.outageEnd === undefined
        ? null
        : recoveryTime(trace, context.outageEnd, context.capacity),
    serverArrivals: trace.arrivals.length,
    workPerRequest: trace.work === undefined || requests === 0 ? null : trace.work / requests,
    outcomes: { ...trace.outcomes },
  };
}
