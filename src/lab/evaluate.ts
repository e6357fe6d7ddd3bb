/**
 * From traces to results: the optimum, the goodput window, every strategy's
 * metrics and chart series. Shared by the simulator and the live runner, so
 * both modes are measured by the same formulas.
 */
import { arrivalTimes } from './arrivals.js';
import { computeMetrics } from './metrics.js';
import { completedWithin, optimum } from './optimum.js';
import type { LabConfig } from './options.js';
import { seededRandom } from './random.js';
import type { LabResult, NamedTrace } from './result.js';
import { arrivalSeries, binWidth, latencyCdf } from './series.js';
import type { RunTrace } from './trace.js';

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
