/**
 * Runs the simulated strategies, one worker thread each (as many at once as
 * `workers`), or in this thread when the worker module is not there (running
 * from the TypeScript sources). A strategy's run is the same either way:
 * same code, same seed, same trace. A worker's heap goes with it when its
 * strategy is done, so a run's peak memory is that of the strategies
 * running at once, not of every strategy so far.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { LabConfig, StrategyName } from '../options.js';
import type { NamedTrace } from '../result.js';
import { strategyConfig } from '../strategies.js';
import type { RunTrace } from '../trace.js';
import { simulateStrategy } from './simulate.js';

/** What a worker sends back: a trace in transferable arrays. */
export interface PackedTrace {
  start: Float64Array;
  end: Float64Array;
  ok: Uint8Array;
  arrivals: Float64Array;
  statuses: Uint16Array;
  attempts: Uint8Array;
  outcomes: Record<string, number>;
  work: number | undefined;
  wallMs: number;
}

/** Packs a trace for `postMessage` (its buffers can be transferred). */
export function packTrace(trace: RunTrace, wallMs: number): PackedTrace {
  return {
    start: Float64Array.from(trace.start),
    end: Float64Array.from(trace.end),
    ok: Uint8Array.from(trace.ok),
    arrivals: Float64Array.from(trace.arrivals),
    statuses: Uint16Array.from(trace.statuses),
    attempts: Uint8Array.from(trace.attempts),
    outcomes: { ...trace.outcomes },
    work: trace.work,
    wallMs,
  };
}

const WORKER = new URL('./worker.js', import.meta.url);

/**
 * Strategies simulated at once by default. One: a strategy of the default
 * run keeps up to ~50 000 requests in flight, several hundred MB of heap,
 * and on two cores a second worker saves less wall time than it costs in
 * memory (docs/lab.md, "How long a run takes").
 */
export const DEFAULT_WORKERS = 1;

/** What a worker posts: progress (virtual ms from the start), then its trace. */
export type WorkerMessage =
  | { type: 'progress'; at: number }
  | { type: 'trace'; trace: PackedTrace };

function inWorker(
  config: LabConfig,
  strategy: StrategyName,
  progress: ((virtualMs: number) => void) | undefined,
): Promise<PackedTrace> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(WORKER, {
      workerData: { config, strategy, progress: progress !== undefined },
    });
    let done = false;
    worker.on('message', (message: WorkerMessage) => {
      if (message.type === 'progress') {
        progress?.(message.at);
        return;
      }
      done = true;
      resolve(message.trace);
    });
    worker.once('error', reject);
    worker.once('exit', (code) => {
      if (!done) reject(new Error(`lab: the worker simulating ${strategy} exited with ${code}`));
    });
  });
}

async function inThread(
  config: LabConfig,
  strategy: StrategyName,
  arrivals: ArrayLike<number>,
  progress: ((virtualMs: number) => void) | undefined,
): Promise<PackedTrace> {
  const began = performance.now();
  const trace = await simulateStrategy(config, strategy, arrivals, progress);
  return packTrace(trace, performance.now() - began);
}

/** What `simulateAll` tells as it goes. */
export interface SimHooks {
  /** A strategy finished. */
  done?: ((name: StrategyName) => void) | undefined;
  /** A strategy's virtual time reached `virtualMs` (every virtual second). */
  progress?: ((name: StrategyName, virtualMs: number) => void) | undefined;
}

/**
 * Simulates every strategy of `config`, at most `workers` at once, and calls
 * the hooks as they go. Results come back in the order of `config.strategies`.
 */
export async function simulateAll(
  config: LabConfig,
  arrivals: ArrayLike<number>,
  workers: number,
  hooks: SimHooks = {},
): Promise<NamedTrace[]> {
  const parallel = existsSync(fileURLToPath(WORKER));
  const names = config.strategies;
  const out = new Array<NamedTrace>(names.length);
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < names.length) {
      const index = next++;
      const name = names[index]!;
      const progress =
        hooks.progress === undefined ? undefined : (at: number) => hooks.progress!(name, at);
      const packed = parallel
        ? await inWorker(config, name, progress)
        : await inThread(config, name, arrivals, progress);
      out[index] = {
        name,
        description: strategyConfig(name, config.hedgeDelay).description,
        trace: packed,
        wallMs: packed.wallMs,
      };
      hooks.done?.(name);
    }
  };
  await Promise.all(Array.from({ length: parallel ? Math.min(workers, names.length) : 1 }, lane));
  return out;
}
