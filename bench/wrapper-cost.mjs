#!/usr/bin/env node
/**
 * The CPU cost of createFetch's own code per call, without any network: the
 * transport is a stub that resolves at once with one shared 200 `Response`.
 * Complements fetch-overhead.mjs, whose loopback figure is noisy on a busy
 * machine: this one tells how many microseconds the wrapper adds per request,
 * to compare with the CPU time a real request costs (fetch-overhead.mjs
 * prints it as "CPU µs/req").
 *
 *   npm run build && node bench/wrapper-cost.mjs [--calls 300000] [--rounds 5]
 */
import { existsSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    calls: { type: 'string', default: '300000' },
    rounds: { type: 'string', default: '5' },
    concurrency: { type: 'string', default: '32' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (values.help) {
  console.log(
    'Usage: npm run build && node bench/wrapper-cost.mjs [--calls N] [--rounds N] [--concurrency N]',
  );
  process.exit(0);
}
const calls = Number(values.calls);
const rounds = Number(values.rounds);
const concurrency = Number(values.concurrency);
for (const [name, n] of Object.entries({ calls, rounds, concurrency })) {
  if (!Number.isInteger(n) || n < 1) {
    console.error(`wrapper-cost: --${name} must be an integer >= 1`);
    process.exit(2);
  }
}

const distEntry = new URL('../dist/index.js', import.meta.url);
if (!existsSync(distEntry)) {
  console.error(
    `wrapper-cost: ${fileURLToPath(distEntry)} not found: run \`npm run build\` first.`,
  );
  process.exit(2);
}
const { createFetch } = await import(distEntry.href);

const response = new Response(null, { status: 200 });
const stub = async () => response;
/** Builds a variant, or skips it when this build does not know one of its options. */
function wrapped(options) {
  try {
    return createFetch({ fetch: stub, ...options });
  } catch (error) {
    console.error(`wrapper-cost: skipped ${JSON.stringify(options)}: ${error.message}`);
    return undefined;
  }
}
const variants = Object.fromEntries(
  Object.entries({
    'bare stub': stub,
    'createFetch (defaults)': wrapped({}),
    'createFetch, policies off': wrapped({ breaker: false, budget: false, rateLimit: false }),
    'createFetch, timeout: false': wrapped({ timeout: false }),
    'for scale: new AbortController()': async (url) =>
      stub(url, { signal: new AbortController().signal }),
  }).filter(([, fetch]) => fetch !== undefined),
);
const url = 'http://127.0.0.1:9/bench';

async function run(fetch) {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const each = Math.ceil(calls / concurrency);
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let i = 0; i < each; i++) await fetch(url);
    }),
  );
  const cpu = process.cpuUsage(cpu0);
  const n = each * concurrency;
  return { wall: ((performance.now() - t0) * 1000) / n, cpu: (cpu.user + cpu.system) / n };
}

const results = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
for (const fetch of Object.values(variants)) await run(fetch); // warm-up
for (let r = 0; r < rounds; r++) {
  for (const [name, fetch] of Object.entries(variants)) results[name].push(await run(fetch));
}
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};
const width = Math.max(...Object.keys(variants).map((k) => k.length));
console.log(`µs per call, median of ${rounds} rounds of ${calls} calls, ${concurrency} in flight`);
console.log(`${'variant'.padEnd(width)}  CPU µs  wall µs`);
for (const [name, rows] of Object.entries(results)) {
  const cpu = median(rows.map((x) => x.cpu))
    .toFixed(2)
    .padStart(6);
  const wall = median(rows.map((x) => x.wall))
    .toFixed(2)
    .padStart(7);
  console.log(`${name.padEnd(width)}  ${cpu}  ${wall}`);
}
console.log(`node ${process.version}`);
