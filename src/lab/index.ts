/**
 * `staunch/lab`: the storm lab. It measures what each retry strategy (four
 * backoff loops and staunch's defaults, all run by staunch's own executor and
 * policies) does to an upstream of limited capacity, in virtual time or on
 * real sockets, against the scenario's theoretical optimum. See docs/lab.md.
 *
 * What a lab user needs, and only that: run a scenario (`runLab`) or every
 * one (`runMatrix`), render the result, the option lists, the fleet harness
 * (`startFleet`), and the types of the options and results. The simulator,
 * the live upstream and the metrics are internal (src/lab/sim/, live/,
 * fleet/, report/; docs/architecture.md).
 *
 * @example
 * import { runLab, renderTable, renderReport } from 'staunch/lab';
 * const result = await runLab({ scenario: 'overload', seed: 7 });
 * console.log(renderTable(result));
 */

export type { ArrivalShape } from './arrivals.js';
export type {
  Fleet,
  FleetMemberContext,
  FleetMemberMain,
  FleetOptions,
} from './fleet/harness.js';
export { startFleet } from './fleet/harness.js';
export type { HedgeCheck, HedgeComparison, HedgeVerdict } from './hedging.js';
export { hedgeVerdict } from './hedging.js';
export type { LiveClient, LiveRequest } from './live/runner.js';
export type { MatrixEntry, MatrixOptions, Verdict, VerdictCheck } from './matrix.js';
export { matrixJson, matrixMarkdown, renderMatrix, runMatrix } from './matrix.js';
export type { StrategyMetrics } from './metrics.js';
export type { Optimum } from './optimum.js';
export type {
  HedgeStrategyName,
  LabConfig,
  LabMode,
  LabOptions,
  LoopName,
  ScenarioName,
  StrategyName,
} from './options.js';
export {
  HEDGE_SCENARIOS,
  HEDGE_STRATEGIES,
  MODES,
  resolveLabOptions,
  SCENARIOS,
  STORM_SCENARIOS,
  STORM_STRATEGIES,
  STRATEGIES,
} from './options.js';
export type { LabJson } from './report/format.js';
export { renderTable, toJson } from './report/format.js';
export type { ReportMeta } from './report/html.js';
export { renderReport } from './report/html.js';
export type { FleetPhaseInfo, FleetRunInfo, LabResult, StrategyResult } from './result.js';
export type { RunLabHooks } from './run.js';
export { runLab } from './run.js';
export type { ArrivalSeries, LatencyCdf } from './series.js';
export type {
  Outage,
  QuotaKind,
  RetryAfterMode,
  ServerOptions,
  SporadicMode,
} from './server-model.js';
