#!/usr/bin/env node
/**
 * The simulator's speed: a scenario (default: overload, its burst of 50 000
 * logical requests over 60 virtual seconds), one strategy at a time in this
 * thread, then all of them in two worker threads at once.
 *
 *   npm run build && node bench/lab-sim-speed.mjs [--scenario S] [--requests N] [--strategies a,b]
 *     [--baseline DIR]
 *
 * `--baseline DIR`: another build's dist/ (e.g. main's), timed strategy by strategy
 * alternately with this one, so that both see the same machine load; prints the ratio.
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    requests: { type: 'string' },
    scenario: { type: 'string' },
    baseline: { type: 'string' },
    strategies: { type: 'string' },
    help: { type: 'boolean' },
  },
});
if (values.help) {
  console.log(
    'npm run build && node bench/lab-sim-speed.mjs [--scenario S] [--requests N] [--strategies a,b]',
  );
  process.exit(0);
}
let lab;
let sim;
let evaluate;
try {
  lab = await import('../dist/lab/index.js');
  // The simulator itself is internal to the lab (src/lab/sim/), imported by path.
  sim = await import('../dist/lab/sim/simulate.js');
  evaluate = await import('../dist/lab/evaluate.js');
} catch {
  console.error('dist/ is missing: run `npm run build` first');
  process.exit(1);
}
const options = {
  scenario: values.scenario ?? 'overload',
  ...(values.requests && { requests: Number(values.requests) }),
};
const config = lab.resolveLabOptions({
  ...options,
  ...(values.strategies && { strategies: values.strategies.split(',') }),
});
const names = config.strategies;
const arrivals = evaluate.scenarioArrivals(config);
console.log(
  `${config.scenario}: ${config.requests} requests over ${config.span / 1000} virtual seconds, node ${process.version}`,
);
/** A build's simulator: lab/sim/simulate.js since the lab split, lab/index.js before it. */
async function simulatorOf(dist) {
  const at = (path) => import(new URL(`file://${resolve(dist)}/${path}`).href);
  return at('lab/sim/simulate.js').catch(() => at('lab/index.js'));
}
const base = values.baseline ? await simulatorOf(values.baseline) : undefined;
const time = async (impl, name) => {
  const began = performance.now();
  const trace = await impl.simulateStrategy(config, name, arrivals);
  return { ms: performance.now() - began, attempts: trace.arrivals.length };
};
let attempts = 0;
let sum = 0;
for (const name of names) {
  const own = await time(sim, name);
  sum += own.ms;
  attempts += own.attempts;
  const perAttempt = (own.ms * 1000) / own.attempts;
  let line = `${name.padEnd(16)} ${(own.ms / 1000).toFixed(2).padStart(6)} s  ${own.attempts} attempts  ${perAttempt.toFixed(1)} µs/attempt`;
  if (base !== undefined && !name.endsWith('+ra')) {
    const other = await time(base, name);
    line += `  baseline ${(other.ms / 1000).toFixed(2)} s (${other.attempts} attempts), ratio ${(own.ms / other.ms).toFixed(2)}`;
  }
  console.log(line);
}
console.log(`sum ${(sum / 1000).toFixed(2)} s for ${attempts} attempts`);
const began = performance.now();
await lab.runLab({ ...options, strategies: names }, { workers: 2 });
console.log(`all, 2 worker threads: ${((performance.now() - began) / 1000).toFixed(2)} s`);
