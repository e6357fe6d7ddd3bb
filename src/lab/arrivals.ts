/**
 * When the logical requests of a scenario arrive: all at once (a herd), at a
 * steady rate, or as a burst that climbs to `peak` × capacity and back.
 * Times are ms from the start of the run, sorted.
 */
import type { Random } from '../internal/clock.js';

/**
 * The arrival pattern of a scenario. `closed`: no schedule, a closed loop of
 * `concurrency` clients each sending its next request when its previous one
 * settled, until the span ends (or `requests` were sent).
 */
export type ArrivalShape = 'burst' | 'steady' | 'instant' | 'closed';

/**
 * The burst's rate over time, in requests per second: a base rate plus a
 * raised-cosine bump of width `width` (ms) centred in the span, peaking at
 * `peakRate`. The bump lasts a third of the span, or less when `requests`
 * do not fill that much; the base rate carries the rest.
 */
export interface BurstProfile {
  /** Requests per second outside the bump (and under it). */
  readonly base: number;
  /** Requests per second at the top of the bump. */
  readonly peakRate: number;
  /** ms from the run's start where the bump begins. */
  readonly from: number;
  /** Width of the bump, ms. */
  readonly width: number;
}

/**
 * Solves the burst profile for `requests` over `span` ms peaking at
 * `peakRate` per second.
 * @throws RangeError when the requests cannot fit under that peak (the base
 * rate would exceed it).
 */
export function burstProfile(requests: number, span: number, peakRate: number): BurstProfile {
  const spanS = span / 1000;
  const widthS = Math.min(spanS / 3, (2 * requests) / peakRate);
  const base = Math.max(0, (requests - (peakRate * widthS) / 2) / (spanS - widthS / 2));
  if (base > peakRate) {
    throw new RangeError(
      `peak must let ${requests} requests arrive within ${span} ms: at least ${Math.ceil(requests / spanS)} per second, got ${peakRate}`,
    );
  }
  return { base, peakRate, from: (span - widthS * 1000) / 2, width: widthS * 1000 };
}

/** Requests arrived by `t` ms under `p` (the integral of the rate). */
export function burstCumulative(p: BurstProfile, t: number): number {
  const base = (p.base * t) / 1000;
  if (t <= p.from) return base;
  const x = Math.min(1, (t - p.from) / p.width);
  const bump = ((p.width / 1000) * (x - Math.sin(2 * Math.PI * x) / (2 * Math.PI))) / 2;
  return base + (p.peakRate - p.base) * bump;
}

/** The burst's rate at `t` ms, per second. */
export function burstRate(p: BurstProfile, t: number): number {
  if (t < p.from || t > p.from + p.width) return p.base;
  const x = (t - p.from) / p.width;
  return p.base + ((p.peakRate - p.base) * (1 - Math.cos(2 * Math.PI * x))) / 2;
}

/**
 * `requests` arrival times over `span` ms, sorted: the order statistics of
 * uniform draws mapped through the shape's cumulative rate (an
 * inhomogeneous Poisson process conditioned on its count).
 */
export function arrivalTimes(
  shape: ArrivalShape,
  requests: number,
  span: number,
  peakRate: number,
  random: Random,
): Float64Array {
  if (shape === 'closed') return new Float64Array(0);
  const out = new Float64Array(requests);
  if (shape === 'instant' || span === 0) return out;
  for (let i = 0; i < requests; i++) out[i] = random();
  out.sort();
  if (shape === 'steady') {
    for (let i = 0; i < requests; i++) out[i] = out[i]! * span;
    return out;
  }
  const p = burstProfile(requests, span, peakRate);
  const total = burstCumulative(p, span);
  let lo = 0;
  for (let i = 0; i < requests; i++) {
    // Sorted targets: each search starts where the previous one ended.
    const target = out[i]! * total;
    let hi = span;
    let a = lo;
    for (let k = 0; k < 40 && hi - a > 1e-6; k++) {
      const mid = (a + hi) / 2;
      if (burstCumulative(p, mid) < target) a = mid;
      else hi = mid;
    }
    lo = a;
    out[i] = (a + hi) / 2;
  }
  return out;
}
