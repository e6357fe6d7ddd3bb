#!/usr/bin/env node
import { existsSync } from 'node:fs';
import { availableParallelism, cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
/**
 * staunch/undici success-path overhead: requests/s of `undici.request` over a
 * dispatcher with staunch's retry interceptor, against bare `undici.request`
 * over an undici `Agent` with the very same settings, on a keep-alive
 * loopback server in a separate process (bench/server.mjs).
 *
 *   npm run build && node bench/undici-overhead.mjs [--help]
 *
 * Five variants, each with its own pool of the same settings:
 * - `bare`: `new Agent(settings)`;
 * - `passthrough`: the same with an interceptor that does nothing but pass
 *   the handler on (undici converts the handler API at each composed
 *   interceptor: the floor any interceptor pays);
 * - `interceptor`: `new Agent(settings).compose(retryInterceptor())`, core defaults
 *   (breaker, budget and adaptive rate limiter on): the goal is about this one;
 * - `no-policies`: the same with `breaker`, `budget` and `rateLimit` off, to
 *   tell the adapter and executor apart from the policies;
 * - `createAgent`: `createAgent()`, whose settings are `settings` (staunch's defaults).
 * Each round runs every variant for `--duration` seconds at a fixed
 * concurrency, in an order that rotates every round, so slow drift of the
 * machine falls on all sides. Ratios are taken within a round (variant / bare),
 * then the median over the rounds. Every body is read.
 */
import { startServer } from './child-server.mjs';

const GOAL = 0.95;

const HELP = `Usage: npm run build && node bench/undici-overhead.mjs [options]

Compares undici.request over staunch's retry interceptor (and over createAgent)
with bare undici.request over an Agent of the same settings, on a keep-alive
HTTP server on 127.0.0.1 in a child process.

Options:
  --duration <s>      seconds per variant per round          (default 1)
  --rounds <n>        measured rounds                        (default 12)
  --warmup <n>        warm-up rounds, discarded              (default 2)
  --concurrency <n>   requests in flight                     (default 32)
  --body-bytes <n>    response body size                     (default 64)
  --dist <dir>        the build to measure                   (default dist/)
  --json              print the results as JSON
  -h, --help          this help

Goal: interceptor/bare >= ${GOAL} (median of the per-round ratios).`;

function fail(message) {
  console.error(`undici-overhead: ${message}`);
  process.exit(2);
}

let args;
try {
  args = parseArgs({
    options: {
      duration: { type: 'string', default: '1' },
      rounds: { type: 'string', default: '12' },
      warmup: { type: 'string', default: '2' },
      concurrency: { type: 'string', default: '32' },
      'body-bytes': { type: 'string', default: '64' },
      dist: { type: 'string', default: fileURLToPath(new URL('../dist', import.meta.url)) },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  }).values;
} catch (error) {
  fail(`${error.message}\n\n${HELP}`);
}
if (args.help) {
  console.log(HELP);
  process.exit(0);
}

function numberArg(name, min, integer = true) {
  const value = Number(args[name]);
  if (!Number.isFinite(value) || value < min || (integer && !Number.isInteger(value))) {
    fail(`--${name} must be ${integer ? 'an integer' : 'a number'} >= ${min}, got ${args[name]}`);
  }
  return value;
}

const config = {
  duration: numberArg('duration', 0.1, false),
  rounds: numberArg('rounds', 1),
  warmup: numberArg('warmup', 0),
  concurrency: numberArg('concurrency', 1),
  bodyBytes: numberArg('body-bytes', 0),
};
const log = (message) => console.error(message);

const entry = pathToFileURL(`${args.dist}/undici/index.js`);
if (!existsSync(entry)) {
  fail(`${fileURLToPath(entry)} not found: run \`npm run build\` first (or pass --dist).`);
}
const { createAgent, retryInterceptor } = await import(entry.href);
const undici = await import('undici');

// staunch's transport defaults (docs/undici.md), as undici Agent options.
const settings = {
  connections: 50,
  connectTimeout: 10_000,
  headersTimeout: 60_000,
  bodyTimeout: 300_000,
  keepAliveTimeout: 4_000,
  keepAliveTimeoutThreshold: 1_000,
  keepAliveMaxTimeout: 60_000,
};
const variants = [
  { name: 'bare', dispatcher: new undici.Agent(settings) },
  {
    name: 'passthrough',
    dispatcher: new undici.Agent(settings).compose(
      (dispatch) => (opts, handler) => dispatch(opts, handler),
    ),
  },
  {
    name: 'interceptor',
    dispatcher: new undici.Agent(settings).compose(retryInterceptor()),
  },
  {
    name: 'no-policies',
    dispatcher: new undici.Agent(settings).compose(
      retryInterceptor({ breaker: false, budget: false, rateLimit: false }),
    ),
  },
  { name: 'createAgent', dispatcher: createAgent() },
];

const perRound = variants.length * config.duration;
const limitSeconds = Math.ceil((config.rounds + config.warmup) * perRound * 1.3 + 30);
setTimeout(() => {
  console.error(`undici-overhead: exceeded the time limit of ${limitSeconds} s, aborting`);
  process.exit(1);
}, limitSeconds * 1000).unref();

const server = await startServer({
  name: 'undici-overhead',
  maxSeconds: limitSeconds + 10,
  bodyBytes: config.bodyBytes,
}).catch((error) => fail(error.message));
const port = server.port;
const serverStats = server.stats;

const url = `http://127.0.0.1:${port}/bench`;
let started = 0;
let firstError;

async function measure(dispatcher) {
  let ok = 0;
  let failed = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const end = t0 + config.duration * 1000;
  const worker = async () => {
    while (performance.now() < end) {
      started++;
      try {
        const { statusCode, body } = await undici.request(url, { dispatcher });
        await body.arrayBuffer();
        if (statusCode === 200) ok++;
        else failed++;
      } catch (error) {
        failed++;
        firstError ??= error;
      }
    }
  };
  await Promise.all(Array.from({ length: config.concurrency }, worker));
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  return {
    requests: ok,
    failed,
    rps: (ok * 1000) / ms,
    cpuPerRequest: ok === 0 ? Number.NaN : (cpu.user + cpu.system) / ok,
  };
}

const median = (values) => {
  const s = values.filter((v) => !Number.isNaN(v)).sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};
const fmt = (n) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '-');

log(
  `undici-overhead: ${variants.map((v) => v.name).join(', ')}; ${config.rounds} rounds ` +
    `(+${config.warmup} warm-up) × ${config.duration} s each, concurrency ${config.concurrency}, ${url}`,
);
const rounds = [];
for (let r = 0; r < config.warmup + config.rounds; r++) {
  const warmup = r < config.warmup;
  const order = variants.map((_, i) => variants[(i + r) % variants.length]);
  const cells = {};
  for (const v of order) cells[v.name] = await measure(v.dispatcher);
  for (const v of variants) cells[v.name].ratio = cells[v.name].rps / cells.bare.rps;
  rounds.push({
    round: warmup ? 0 : r - config.warmup + 1,
    warmup,
    order: order.map((v) => v.name),
    cells,
  });
  log(
    `  ${warmup ? 'warm-up' : `round ${r - config.warmup + 1}`}: ` +
      variants
        .map((v) => `${v.name} ${fmt(cells[v.name].rps)} (${cells[v.name].ratio.toFixed(3)})`)
        .join(', '),
  );
}

const measured = rounds.filter((r) => !r.warmup);
const summary = {};
for (const v of variants) {
  const ratios = measured.map((r) => r.cells[v.name].ratio);
  summary[v.name] = {
    rps: median(measured.map((r) => r.cells[v.name].rps)),
    ratio: median(ratios),
    vsPassthrough: median(measured.map((r) => r.cells[v.name].rps / r.cells.passthrough.rps)),
    ratioMin: Math.min(...ratios),
    ratioMax: Math.max(...ratios),
    cpuPerRequest: median(measured.map((r) => r.cells[v.name].cpuPerRequest)),
  };
}
const stats = await serverStats();
const failures = rounds.reduce(
  (n, r) => n + Object.values(r.cells).reduce((m, c) => m + c.failed, 0),
  0,
);
server.stop();
await Promise.all(variants.map((v) => v.dispatcher.close()));

const environment = {
  date: new Date().toISOString(),
  node: process.version,
  undici: (await import('node:module')).createRequire(import.meta.url)('undici/package.json')
    .version,
  availableParallelism: availableParallelism(),
  cpuModel: cpus()[0]?.model,
  platform: `${process.platform} ${process.arch}`,
};

if (args.json) {
  console.log(JSON.stringify({ environment, config, goal: GOAL, summary, rounds }, null, 2));
} else {
  const rows = [
    ['variant', 'rps (median)', 'ratio', 'range', 'vs passthrough', 'CPU µs/req', 'goal'],
  ];
  for (const v of variants) {
    const s = summary[v.name];
    rows.push([
      v.name,
      fmt(s.rps),
      s.ratio.toFixed(3),
      `${s.ratioMin.toFixed(3)}–${s.ratioMax.toFixed(3)}`,
      s.vsPassthrough.toFixed(3),
      s.cpuPerRequest.toFixed(1),
      v.name === 'interceptor' ? `>= ${GOAL} ${s.ratio >= GOAL ? 'met' : 'NOT met'}` : '',
    ]);
  }
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => row[i].length)));
  console.log('');
  for (const row of rows) console.log(row.map((c, i) => c.padStart(widths[i])).join('  '));
  console.log('');
  console.log(
    `ratio = variant/bare requests/s within a round, median over ${measured.length} rounds ` +
      '(vs passthrough: the same against the do-nothing interceptor); ' +
      `${config.concurrency} in flight; server counted ${stats.requests} requests.`,
  );
  console.log(
    `node ${environment.node}, undici ${environment.undici}; ${environment.availableParallelism} CPUs ` +
      `(${environment.cpuModel}); ${environment.date}`,
  );
}

if (failures > 0) {
  console.error(`undici-overhead: ${failures} request(s) failed; first error:`, firstError);
  process.exitCode = 1;
}
if (stats.requests !== started) {
  console.error(
    `undici-overhead: the server counted ${stats.requests} requests, the client started ${started}`,
  );
  process.exitCode = 1;
}
