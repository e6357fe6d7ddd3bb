/**
 * `runLab`: resolves the options, runs every strategy in the chosen mode and
 * measures them against the scenario's optimum.
 */

import { redactUrl } from '../internal/redact.js';
import { evaluate, scenarioArrivals } from './evaluate.js';
import { runFleet } from './fleet/runner.js';
import { type LiveClient, runLive } from './live/runner.js';
import { isFleetRun, type LabConfig, type LabOptions, resolveLabOptions } from './options.js';
import type { LabResult } from './result.js';
import { DEFAULT_WORKERS, simulateAll } from './sim/pool.js';
import { horizon } from './sim/simulate.js';

/**
 * `sim overload · staunch 42 % of virtual time · finished 3/9 · ETA 12 s`: the
 * strategy that moved, its share of the scenario's horizon, and an ETA
 * from the share of all strategies done so far.
 */
export function progressLine(
  config: LabConfig,
  name: string,
  shares: ReadonlyMap<string, number>,
  elapsed: number,
): string {
  let sum = 0;
  for (const v of shares.values()) sum += v;
  const total = config.strategies.length;
  const share = sum / total;
  const eta = share > 0 ? Math.max(0, (elapsed * (1 - share)) / share / 1000) : Number.NaN;
  const own = Math.round((shares.get(name) ?? 0) * 100);
  const finished = [...shares.values()].filter((v) => v >= 1).length;
  const left = Number.isFinite(eta) ? `ETA ${eta < 10 ? eta.toFixed(1) : Math.round(eta)} s` : '';
  return `sim ${config.scenario} · ${name} ${own} % of virtual time · finished ${finished}/${total} · ${left}`;
}

/** How a run goes, beyond what it measures. */
export interface RunLabHooks {
  /**
   * Sim: strategies simulated at once, each in a worker thread (when running
   * from the built package). @default DEFAULT_WORKERS
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
 * @throws TypeError (an option of the wrong type) or RangeError (a value out of
 *   range), naming the option and the value, before anything runs.
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
  const shares = new Map<string, number>();
  const end = horizon(config);
  let shown = 0;
  const traces = await simulateAll(config, arrivals, hooks.workers ?? DEFAULT_WORKERS, {
    done: (name) => {
      done++;
      shares.set(name, 1);
      const wall = ((performance.now() - began) / 1000).toFixed(1);
      progress(
        `sim ${config.scenario}: ${name} done (${done}/${config.strategies.length}, ${wall} s)`,
      );
    },
    progress: (name, at) => {
      // A run may outlast its horizon (a long queue): hold at 99 % until it is done.
      shares.set(name, Math.min(0.99, at / end));
      const now = performance.now();
      if (now - shown < 250) return;
      shown = now;
      progress(progressLine(config, name, shares, now - began));
    },
  });
  return evaluate(config, arrivals, traces);
}
