/**
 * From traces to results: the optimum, the goodput window, every strategy's
 * metrics and chart series. Shared by the simulator and the live runner, so
 * both modes are measured by the same formulas.
 */
import { arrivalTimes } from './arrivals.js';
import type { FleetPhaseInfo } from './fleet.js';
import { computeMetrics, type StrategyMetrics } from './metrics.js';
import { completedWithin, type Optimum, optimum } from './optimum.js';
import type { LabConfig } from './options.js';
import { seededRandom } from './random.js';
import {
  type ArrivalSeries,
  arrivalSeries,
  binWidth,
  type LatencyCdf,
  latencyCdf,
} from './series.js';
import type { RunTrace } from './trace.js';

/** One strategy (or live peer) of a lab run, measured. */
export interface StrategyResult extends StrategyMetrics {
  /** What the strategy is, in one line. */
  readonly description: string;
  /** Server arrivals over time, for the report. */
  readonly series: ArrivalSeries;
  /** Latency distribution of answers, for the report. */
  readonly latency: LatencyCdf;
  /** Wall time the run took, ms. */
  readonly wallMs: number;
}

/** The result of a lab run. */
export interface LabResult {
  readonly config: LabConfig;
  /** The optimum, with its goodput over the same window as the strategies'. */
  readonly optimum: Optimum & { readonly goodput: number };
  /** Where goodput is measured, ms from the start: demand over capacity in the optimum, else the arrival span. */
  readonly window: readonly [number, number];
  /**
   * What the goodput window is: `saturated` (demand over capacity in the
   * optimum), `arrivals` (the arrival span), `span` (a closed loop's
   * duration), `count` (a closed loop bound by its count: each run over its
   * own time to the last answer, the optimum over the ideal's).
   */
  readonly goodputBy?: 'saturated' | 'arrivals' | 'span' | 'count' | undefined;
  readonly strategies: readonly StrategyResult[];
  /** Fleet runs only (`--fleet`, `--store`): the processes, the store (redacted) and each phase's members. */
  readonly fleet?: FleetRunInfo | undefined;
}

/** What a fleet run reports beside its traces. */
export interface FleetRunInfo {
  readonly processes: number;
  /** `'local'` or the Redis URL, password redacted. */
  readonly store: string;
  readonly phases: readonly FleetPhaseInfo[];
}

/** A trace to evaluate, with its name and description. */
export interface NamedTrace {
  readonly name: string;
  readonly description: string;
  readonly trace: RunTrace;
  readonly wallMs: number;
}

/** The arrival times of `config`'s logical requests (ms, sorted), from its seed. */
export function scenarioArrivals(config: LabConfig): Float64Array {
  return arrivalTimes(
    config.arrivals,
    config.requests,
    config.span,
    config.peak * config.server.capacity,
    seededRandom(config.seed, 'arrivals'),
  );
}

/** Measures `traces` against the scenario of `config` whose requests arrived at `arrivals`. */
export function evaluate(
  config: LabConfig,
  arrivals: ArrayLike<number>,
  traces: readonly NamedTrace[],
): LabResult {
  const closed = config.arrivals === 'closed';
  const best = optimum({
    arrivals,
    server: config.server,
    rtt: config.rtt,
    deadline: config.deadline,
    attempts: config.attempts,
    concurrency: closed ? config.concurrency : 0,
    span: config.span,
    requests: config.requests,
  });
  const lastArrival = arrivals.length === 0 ? 0 : arrivals[arrivals.length - 1]!;
  // A closed loop that the ideal client finishes before its span ends is bound by its count:
  // goodput is then answers over the time each run took to give them (its own last answer).
  const countBound = closed && best.requests >= config.requests && best.finish < config.span;
  const window: readonly [number, number] = closed
    ? [0, countBound ? best.finish : config.span]
    : (best.saturated ?? [0, Math.max(1000, lastArrival)]);
  const outages = config.server.outages;
  const outageEnd = outages.length === 0 ? undefined : Math.max(...outages.map((w) => w.end));
  let span = Math.max(1000, lastArrival);
  for (const { trace } of traces) {
    for (let i = 0; i < trace.end.length; i++) if (trace.end[i]! > span) span = trace.end[i]!;
  }
  const bin = binWidth(span);
  const strategies = traces.map(({ name, description, trace, wallMs }) => ({
    ...computeMetrics(name, trace, {
      deadline: config.deadline,
      capacity: config.server.capacity,
      window: countBound ? [0, lastEnd(trace) + 1e-9] : window,
      outageEnd,
    }),
    description,
    series: arrivalSeries(trace, span, bin),
    latency: latencyCdf(trace, config.deadline),
    wallMs,
  }));
  const seconds = (window[1] - window[0]) / 1000;
  const ideal = countBound ? best.successes : completedWithin(best, window[0], window[1]);
  return {
    config,
    optimum: { ...best, goodput: seconds > 0 ? ideal / seconds : 0 },
    window,
    goodputBy: countBound ? 'count' : closed ? 'span' : best.saturated ? 'saturated' : 'arrivals',
    strategies,
  };
}

/** When the last request of `trace` settled, ms. */
function lastEnd(trace: RunTrace): number {
  let last = 0;
  for (let i = 0; i < trace.end.length; i++) if (trace.end[i]! > last) last = trace.end[i]!;
  return last;
}
