/**
 * Worker thread entry: simulates one strategy and posts its packed trace.
 * The arrivals are drawn again from the seed (the same times as the parent's).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { scenarioArrivals } from '../evaluate.js';
import type { LabConfig, StrategyName } from '../options.js';
import { packTrace, type WorkerMessage } from './pool.js';
import { simulateStrategy } from './simulate.js';

const { config, strategy, progress } = workerData as {
  config: LabConfig;
  strategy: StrategyName;
  progress: boolean;
};
const post = (message: WorkerMessage, transfer?: ArrayBuffer[]): void =>
  parentPort!.postMessage(message, transfer);
const began = performance.now();
const trace = await simulateStrategy(
  config,
  strategy,
  scenarioArrivals(config),
  progress ? (at) => post({ type: 'progress', at }) : undefined,
);
const packed = packTrace(trace, performance.now() - began);
post({ type: 'trace', trace: packed }, [
  packed.start.buffer,
  packed.end.buffer,
  packed.ok.buffer,
  packed.arrivals.buffer,
  packed.statuses.buffer,
  packed.attempts.buffer,
] as ArrayBuffer[]);
