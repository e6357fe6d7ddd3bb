#!/usr/bin/env node
/**
 * The CPU cost of createFetch's own code per call, without any network: the
 * transport is a stub that resolves at once with one shared 200 `Response`.
 * Complements fetch-overhead.mjs, whose loopback figure is noisy on a busy
 * machine: this one tells how many microseconds the wrapper adds per request,
 * to compare with the CPU time a real request costs (fetch-overhead.mjs
 * prints it as "CPU µs/req").
 *
 * `retryInterceptor` is measured the same way, over a stub dispatch that
 * answers every request at once (a 200 with no body) on the next microtask.
 * With `STAUNCH_BEFORE_DIST` set to another build's dist/, every staunch
 * variant is also measured on that build (`… @before`), in the same rounds.
 *
 *   npm run build && node bench/wrapper-cost.mjs [--calls 300000] [--rounds 5]
 *   STAUNCH_BEFORE_DIST=/tmp/base/dist node bench/wrapper-cost.mjs
 */
import { existsSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
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
const builds = [['', fileURLToPath(new URL('../dist', import.meta.url))]];
const before = process.env.STAUNCH_BEFORE_DIST;
if (before !== undefined) {
  if (!existsSync(`${before}/index.js`)) {
    console.error(`wrapper-cost: STAUNCH_BEFORE_DIST=${before} has no index.js`);
    process.exit(2);
  }
  builds.push([' @before', before]);
}

const response = new Response(null, { status: 200 });
const stub = async () => response;

/** A dispatch that answers 200, no body, on the next microtask, through the new handler API. */
const controller = {
  abort() {},
  pause() {},
  resume() {},
  aborted: false,
  paused: false,
  reason: null,
};
function stubDispatch(_opts, handler) {
  queueMicrotask(() => {
    handler.onRequestStart?.(controller, {});
    handler.onResponseStart?.(controller, 200, {}, 'OK');
    handler.onResponseEnd?.(controller, {});
  });
  return true;
}
/** One request through an interceptor-wrapped dispatch, resolved at the response's end. */
function viaDispatch(dispatch) {
  const opts = { origin: 'http://127.0.0.1:9', path: '/bench', method: 'GET', headers: {} };
  return () =>
    new Promise((resolve, reject) => {
      dispatch(opts, {
        onRequestStart() {},
        onResponseStart() {},
        onResponseData() {},
        onResponseEnd: () => resolve(),
        onResponseError: (_c, error) => reject(error),
      });
    });
}

/** Builds a variant, or skips it when this build does not know one of its options. */
function tryBuild(label, make) {
  try {
    return make();
  } catch (error) {
    console.error(`wrapper-cost: skipped ${label}: ${error.message}`);
    return undefined;
  }
}
const entries = [['bare stub', stub]];
const off = { breaker: false, budget: false, rateLimit: false };
for (const [tag, dir] of builds) {
  const { createFetch } = await import(pathToFileURL(`${dir}/index.js`).href);
  const wrapped = (options) =>
    tryBuild(JSON.stringify(options), () => createFetch({ fetch: stub, ...options }));
  entries.push([`createFetch (defaults)${tag}`, wrapped({})]);
  entries.push([`createFetch, policies off${tag}`, wrapped(off)]);
  entries.push([`createFetch, timeout: false${tag}`, wrapped({ timeout: false })]);
  let undici;
  try {
    undici = await import(pathToFileURL(`${dir}/undici/index.js`).href);
  } catch (error) {
    console.error(`wrapper-cost: no staunch/undici in ${dir}: ${error.message}`);
  }
  if (undici !== undefined) {
    const intercepted = (options) =>
      tryBuild(`retryInterceptor ${JSON.stringify(options)}`, () =>
        viaDispatch(undici.retryInterceptor(options)(stubDispatch)),
      );
    entries.push([`retryInterceptor (defaults)${tag}`, intercepted({})]);
    entries.push([`retryInterceptor, policies off${tag}`, intercepted(off)]);
  }
}
entries.push(['bare stub dispatch', viaDispatch(stubDispatch)]);
entries.push([
  'for scale: new AbortController()',
  async (url) => stub(url, { signal: new AbortController().signal }),
]);
const variants = Object.fromEntries(entries.filter(([, fetch]) => fetch !== undefined));
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
