/**
 * `runLab`: resolves the options, runs every strategy in the chosen mode and
 * measures them against the scenario's optimum.
 */

import { redactUrl } from '../internal/redact.js';
import { evaluate, type LabResult, scenarioArrivals } from './evaluate.js';
import { runFleet } from './fleet.js';
import { type LiveClient, runLive } from './live.js';
import { isFleetRun, type LabOptions, resolveLabOptions } from './options.js';
import { simulateAll } from './sim-pool.js';

/** How a run goes, beyond what it measures. */
export interface RunLabHooks {
  /**
   * Sim: strategies simulated at once, each in a worker thread (when running
   * from the built package). @default 2
   */
  workers?: number | undefined;
  /** Progress lines (the CLI prints them on stderr). */
  progress?: ((line: string) => void) | undefined;
  /** Live: more clients to measure beside the strategies (the peers of bench/peers). */
  peers?: readonly LiveClient[] | undefined;
}

/**
 * Runs the lab.
 * @example
 * const result = await runLab({ scenario: 'overload', requests: 10_000, capacity: 200 });
 * console.log(renderTable(result));
 * @throws LabOptionError (a RangeError) for an invalid option, before anything runs.
 */
export async function runLab(
  options: LabOptions = {},
  hooks: RunLabHooks = {},
): Promise<LabResult> {
  const config = resolveLabOptions(options);
  const progress = hooks.progress ?? (() => {});
  const arrivals = scenarioArrivals(config);
  if (config.mode === 'live' && isFleetRun(config)) {
    const { traces, phases } = await runFleet(config, arrivals, progress);
    const fleet = { processes: config.fleet, store: redactUrl(config.store), phases };
    return { ...evaluate(config, arrivals, traces), fleet };
  }
  if (config.mode === 'live') {
    const traces = await runLive(config, arrivals, { progress, peers: hooks.peers ?? [] });
    return evaluate(config, arrivals, traces);
  }
  const began = performance.now();
  let done = 0;
  const traces = await simulateAll(config, arrivals, hooks.workers ?? 2, (name) => {
    done++;
    const wall = ((performance.now() - began) / 1000).toFixed(1);
    progress(
      `sim ${config.scenario}: ${name} done (${done}/${config.strategies.length}, ${wall} s)`,
    );
  });
  return evaluate(config, arrivals, traces);
}
