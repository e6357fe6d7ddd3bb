/**
 * `staunch/lab`: the storm lab. It measures what each retry strategy (four
 * backoff loops and staunch's defaults, all run by staunch's own executor and
 * policies) does to an upstream of limited capacity, in virtual time or on
 * real sockets, against the scenario's theoretical optimum. See docs/lab.md.
 *
 * @example
 * import { runLab, renderTable, renderReport } from 'staunch/lab';
 * const result = await runLab({ scenario: 'overload', seed: 7 });
 * console.log(renderTable(result));
 */

export type { ArrivalShape, BurstProfile } from './arrivals.js';
export { arrivalTimes, burstProfile } from './arrivals.js';
export type { FleetRunInfo, LabResult, NamedTrace, StrategyResult } from './evaluate.js';
export { evaluate, scenarioArrivals } from './evaluate.js';
export type { FleetPhaseInfo } from './fleet.js';
export { checkRedis, FLEET_STORE_TIMEOUT, runFleet } from './fleet.js';
export type { FleetMemberInput, FleetMemberResult } from './fleet-member.js';
export type { LabJson } from './format.js';
export { describeScenario, renderTable, toJson, wrap } from './format.js';
export type { LiveClient, LiveRequest } from './live.js';
export { runLive, strategyClient, withoutPacing } from './live.js';
export type { MatrixEntry, MatrixOptions, Verdict, VerdictCheck } from './matrix.js';
export { matrixJson, matrixMarkdown, renderMatrix, runMatrix, verdictOf } from './matrix.js';
export type { MetricsContext, StrategyMetrics } from './metrics.js';
export {
  computeMetrics,
  HERD_BIN_MS,
  HERD_MIN_RETRIES,
  herdPeak,
  quantile,
  recoveryTime,
} from './metrics.js';
export type { Optimum, OptimumInput } from './optimum.js';
export { completedWithin, optimum } from './optimum.js';
export type {
  LabConfig,
  LabMode,
  LabOptions,
  LoopName,
  ScenarioName,
  StrategyName,
} from './options.js';
export {
  isFleetRun,
  LabOptionError,
  MODES,
  PRESETS,
  RETRY_AFTER_MODES,
  resolveLabOptions,
  SCENARIOS,
  STRATEGIES,
  UNPACED_STRATEGIES,
} from './options.js';
export { seededRandom } from './random.js';
export { renderReport } from './report.js';
export type { RunLabHooks } from './run.js';
export { progressLine, runLab } from './run.js';
export type { Preset } from './scenarios.js';
export { flapping, sendsPacing } from './scenarios.js';
export type { ArrivalSeries, LatencyCdf } from './series.js';
export type {
  Outage,
  QuotaKind,
  RetryAfterMode,
  ServerOptions,
  ServerVerdict,
  SporadicMode,
} from './server-model.js';
export {
  FixedWindow,
  isAnswer,
  PACING_HEADERS,
  responseHeaders,
  ServerModel,
} from './server-model.js';
export { horizon, SIM_EPOCH, simulateStrategy } from './sim.js';
export type { StrategyConfig } from './strategies.js';
export { isLoop, strategyConfig } from './strategies.js';
export type { RunTrace } from './trace.js';
export { TraceRecorder } from './trace.js';
export { VirtualClock } from './virtual-clock.js';
