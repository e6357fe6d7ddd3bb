/**
 * What the report draws: server arrivals over time (split by status) and the
 * latency distribution of successful requests, binned from a trace.
 */
import { successLatencies } from './metrics.js';
import type { RunTrace } from './trace.js';

/** Server arrivals per bin, split by the upstream's answer. */
export interface ArrivalSeries {
  /** Bin width, ms. */
  readonly bin: number;
  /** Per bin: logical requests issued (demand). */
  readonly issued: readonly number[];
  /** Per bin: attempts that reached the upstream. */
  readonly arrivals: readonly number[];
  /** Per bin: of those, answered 2xx. */
  readonly ok: readonly number[];
  /** Per bin: of those, answered 429. */
  readonly refused: readonly number[];
}

/** The latency distribution: `[latency ms, fraction of all requests at or under it]`. */
export type LatencyCdf = readonly (readonly [number, number])[];

const NICE = [10, 20, 50, 100, 200, 250, 500, 1000, 2000, 5000, 10_000];

/** A bin width giving at most ~`target` bins over `span` ms. */
export function binWidth(span: number, target = 300): number {
  for (const b of NICE) if (span / b <= target) return b;
  return Math.ceil(span / target / 10_000) * 10_000;
}

/** Bins `trace` over `[0, span)` ms. */
export function arrivalSeries(trace: RunTrace, span: number, bin: number): ArrivalSeries {
  const n = Math.max(1, Math.ceil(span / bin));
  const issued = new Array<number>(n).fill(0);
  const arrivals = new Array<number>(n).fill(0);
  const ok = new Array<number>(n).fill(0);
  const refused = new Array<number>(n).fill(0);
  const at = (t: number) => Math.min(n - 1, Math.max(0, Math.floor(t / bin)));
  for (let i = 0; i < trace.start.length; i++) issued[at(trace.start[i]!)]!++;
  for (let i = 0; i < trace.arrivals.length; i++) {
    const b = at(trace.arrivals[i]!);
    arrivals[b]!++;
    const s = trace.statuses[i]!;
    if (s < 300) ok[b]!++;
    else if (s === 429) refused[b]!++;
  }
  return { bin, issued, arrivals, ok, refused };
}

/**
 * The latency CDF of successes within `deadline`, as up to `points` steps;
 * the fractions are of all requests, so the curve ends at the success rate.
 */
export function latencyCdf(trace: RunTrace, deadline: number, points = 120): LatencyCdf {
  const sorted = successLatencies(trace, deadline);
  const total = trace.start.length;
  const out: [number, number][] = [];
  if (sorted.length === 0 || total === 0) return out;
  const step = Math.max(1, Math.floor(sorted.length / points));
  for (let i = step - 1; i < sorted.length; i += step) out.push([sorted[i]!, (i + 1) / total]);
  const last = sorted.length - 1;
  if (out.length === 0 || out[out.length - 1]![0] !== sorted[last]) {
    out.push([sorted[last]!, sorted.length / total]);
  }
  return out;
}
