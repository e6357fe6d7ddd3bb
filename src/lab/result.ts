/**
 * What a lab run produces: the measured strategies, the traces they were
 * measured from, and what a fleet run adds. Types only, so that every runner
 * (sim/, live/, fleet/), the evaluation and the report share them without
 * importing one another.
 */
import type { StrategyMetrics } from './metrics.js';
import type { Optimum } from './optimum.js';
import type { LabConfig } from './options.js';
import type { ArrivalSeries, LatencyCdf } from './series.js';
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

/** What a fleet run adds to its traces: per phase, what its members reported. */
export interface FleetPhaseInfo {
  readonly name: 'local' | 'shared';
  /** Members that reported `storeDegraded` (fell back to local state at least once). */
  readonly degradedProcesses: number;
  /** The latest a member was for the run's start, ms. */
  readonly lateMs: number;
}
