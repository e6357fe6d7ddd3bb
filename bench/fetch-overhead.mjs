#!/usr/bin/env node
import { existsSync, readFileSync } from 'node:fs';
import { availableParallelism, cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
/**
 * createFetch success-path overhead: requests/s of a fetch wrapped by
 * `createFetch` (defaults) against the bare fetch it wraps, on a keep-alive
 * loopback server that runs in a separate process (bench/lib/server.mjs).
 *
 *   npm run build && node bench/fetch-overhead.mjs [--help]
 *
 * Variants are measured in pairs (bare, wrapped) over the same transport:
 * Node's global fetch, and, when the `undici` package is installed, npm
 * undici's fetch over one shared `Agent`. Each round runs every variant for
 * `--duration` seconds at a fixed concurrency; the order inside a pair flips
 * every round (A B, B A, A B…) so slow drift of the machine falls on both
 * sides. The ratio wrapped/bare is taken within each round, then the median
 * over the rounds. See docs/benchmarks.md.
 */
import { startServer } from './lib/child-server.mjs';

const GOAL = 0.97;

const HELP = `Usage: npm run build && node bench/fetch-overhead.mjs [options]

Compares the success path of staunch's createFetch (defaults) with the bare
fetch it wraps, on a keep-alive HTTP server on 127.0.0.1 in a child process.

Options:
  --duration <s>        seconds per variant per round        (default 1)
  --rounds <n>          measured rounds                      (default 16)
  --warmup <n>          warm-up rounds, discarded            (default 2)
  --concurrency <n>     requests in flight                   (default 32)
  --max-requests <n>    cap on requests per variant per round (default 1000000)
  --body-bytes <n>      response body size                   (default 64)
  --quiet <cores>       a round where other processes kept more than this
                        many cores busy is marked as loaded  (default 0.2)
  --no-undici           skip the npm undici pair
  --signal-control      also run each bare fetch with a fresh AbortSignal per
                        request (what createFetch gives the transport), to
                        separate the transport's signal cost from staunch's own
  --json                print the results as JSON instead of a table
  -h, --help            this help

Goal: wrapped/bare >= ${GOAL} (median of the per-round ratios).`;

function fail(message) {
  console.error(`fetch-overhead: ${message}`);
  process.exit(2);
}

let args;
try {
  args = parseArgs({
    options: {
      duration: { type: 'string', default: '1' },
      rounds: { type: 'string', default: '16' },
      warmup: { type: 'string', default: '2' },
      concurrency: { type: 'string', default: '32' },
      'max-requests': { type: 'string', default: '1000000' },
      'body-bytes': { type: 'string', default: '64' },
      quiet: { type: 'string', default: '0.2' },
      'no-undici': { type: 'boolean', default: false },
      'signal-control': { type: 'boolean', default: false },
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

function numberArg(name, { min, integer = true }) {
  const value = Number(args[name]);
  if (!Number.isFinite(value) || value < min || (integer && !Number.isInteger(value))) {
    fail(`--${name} must be ${integer ? 'an integer' : 'a number'} >= ${min}, got ${args[name]}`);
  }
  return value;
}

const config = {
  duration: numberArg('duration', { min: 0.1, integer: false }),
  rounds: numberArg('rounds', { min: 1 }),
  warmup: numberArg('warmup', { min: 0 }),
  concurrency: numberArg('concurrency', { min: 1 }),
  maxRequests: numberArg('max-requests', { min: 1 }),
  bodyBytes: numberArg('body-bytes', { min: 0 }),
  quiet: numberArg('quiet', { min: 0, integer: false }),
};
const log = (message) => console.error(message);

// --- staunch, from the build --------------------------------------------------

const distEntry = new URL('../dist/index.js', import.meta.url);
if (!existsSync(distEntry)) {
  fail(
    `${fileURLToPath(distEntry)} not found.\n` +
      'This benchmark measures the built library: run `npm run build` first, then\n' +
      '  node bench/fetch-overhead.mjs',
  );
}
const { createFetch } = await import(distEntry.href);

// --- the transports -----------------------------------------------------------

/** Pairs of variants over one transport: [label, bare, wrapped]. */
const pairs = [
  {
    name: 'global fetch',
    bare: globalThis.fetch,
    wrapped: createFetch({ fetch: globalThis.fetch }),
  },
];

let agent;
let undiciVersion;
/**
 * npm undici is imported only after the global fetch has sent its first
 * request (see "the server" below): on import, npm undici installs its own
 * Agent as the process's global dispatcher when none is set yet, and Node's
 * bundled fetch would then run on it, so the "global fetch" pair would not be
 * the fetch users get.
 */
let undici;
if (!args['no-undici']) {
  undiciVersion = await undiciPackageVersion();
  if (undiciVersion === undefined) {
    log('fetch-overhead: npm package `undici` not installed; skipping the undici pair.');
  } else {
    // One Agent for both sides; the closure costs the same on both.
    const undiciFetch = (url, init) => undici.fetch(url, { ...init, dispatcher: agent });
    pairs.push({
      name: 'undici fetch',
      bare: undiciFetch,
      wrapped: createFetch({ fetch: undiciFetch }),
    });
  }
}

async function undiciPackageVersion() {
  try {
    const { createRequire } = await import('node:module');
    return createRequire(import.meta.url)('undici/package.json').version;
  } catch {
    return undefined;
  }
}

// --- time bounds --------------------------------------------------------------

// The control: the bare transport, given a fresh AbortSignal per request as createFetch does.
const sides = args['signal-control'] ? ['bare', 'signal', 'wrapped'] : ['bare', 'wrapped'];
for (const pair of pairs) {
  const { bare } = pair;
  pair.signal = (target) => bare(target, { signal: new AbortController().signal });
}
const variantsPerRound = pairs.length * sides.length;
const plannedSeconds = (config.rounds + config.warmup) * variantsPerRound * config.duration;
// Slack for start-up and each round's tail of in-flight requests.
const limitSeconds = Math.ceil(plannedSeconds * 1.5 + 30);
const clientLimit = setTimeout(() => {
  console.error(`fetch-overhead: exceeded the time limit of ${limitSeconds} s, aborting`);
  process.exit(1);
}, limitSeconds * 1000);
clientLimit.unref();

// --- the server, in its own process -------------------------------------------

const server = await startServer({
  name: 'fetch-overhead',
  maxSeconds: limitSeconds + 10,
  bodyBytes: config.bodyBytes,
}).catch((error) => fail(error.message));
const port = server.port;
const serverStats = server.stats;

// --- measuring ----------------------------------------------------------------

const url = `http://127.0.0.1:${port}/bench`;
let started = 0;
let firstError;

if (undiciVersion !== undefined && !args['no-undici']) {
  // The global fetch first, so that Node's bundled undici sets the global dispatcher.
  started++;
  await (await globalThis.fetch(url)).arrayBuffer();
  undici = await import('undici');
  agent = new undici.Agent({ keepAliveTimeout: 30_000 });
  if (globalThis[Symbol.for('undici.globalDispatcher.1')] instanceof undici.Agent) {
    fail("npm undici's Agent is the global fetch's dispatcher: the global pair would be wrong");
  }
}

/** Busy CPU time of the whole machine in ms, from /proc/stat (Linux), else undefined. */
function machineBusyMs() {
  try {
    const fields = readFileSync('/proc/stat', 'latin1').split('\n', 1)[0].trim().split(/\s+/);
    // cpu user nice system idle iowait irq softirq steal …, in USER_HZ (1/100 s).
    const [user, nice, system, , , irq, softirq] = fields.slice(1).map(Number);
    return (user + nice + system + irq + softirq) * 10;
  } catch {
    return undefined;
  }
}

/**
 * Runs `fetch` with `concurrency` workers for `duration` s, every body read.
 * Also returns the client's CPU time per request, and how many cores the
 * server and every other process of the machine kept busy meanwhile.
 */
async function measure(fetch) {
  let ok = 0;
  let failed = 0;
  let issued = 0;
  const server0 = await serverStats();
  const busy0 = machineBusyMs();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const end = t0 + config.duration * 1000;
  const worker = async () => {
    while (issued < config.maxRequests && performance.now() < end) {
      issued++;
      started++;
      try {
        const res = await fetch(url);
        await res.arrayBuffer();
        if (res.status === 200) ok++;
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
  const busy1 = machineBusyMs();
  const server1 = await serverStats();
  const clientMs = (cpu.user + cpu.system) / 1000;
  const serverMs = server1.cpu - server0.cpu;
  return {
    requests: ok,
    failed,
    ms,
    rps: (ok * 1000) / ms,
    cpuPerRequest: ok === 0 ? Number.NaN : (clientMs * 1000) / ok,
    newConnections: server1.connections - server0.connections,
    clientCores: clientMs / ms,
    serverCores: serverMs / ms,
    otherCores:
      busy0 === undefined || busy1 === undefined
        ? undefined
        : Math.max(0, (busy1 - busy0 - clientMs - serverMs) / ms),
  };
}

const median = (values) => {
  const s = values.filter((v) => v !== undefined && !Number.isNaN(v)).sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};

const rounds = [];
const totalRounds = config.warmup + config.rounds;
log(
  `fetch-overhead: ${pairs.map((p) => p.name).join(', ')}; ${config.rounds} rounds ` +
    `(+${config.warmup} warm-up) × ${variantsPerRound} variants × ${config.duration} s, ` +
    `concurrency ${config.concurrency}, server on ${url}`,
);
for (let r = 0; r < totalRounds; r++) {
  const warmup = r < config.warmup;
  const order = r % 2 === 0 ? sides : [...sides].reverse();
  const round = { round: warmup ? 0 : r - config.warmup + 1, warmup, order, pairs: {} };
  for (const pair of pairs) {
    const cell = {};
    for (const side of order) cell[side] = await measure(pair[side]);
    cell.ratio = cell.wrapped.rps / cell.bare.rps;
    cell.cpuRatio = cell.bare.cpuPerRequest / cell.wrapped.cpuPerRequest;
    if (cell.signal !== undefined) cell.signalRatio = cell.signal.rps / cell.bare.rps;
    cell.otherCores = Math.max(...sides.map((side) => cell[side].otherCores ?? 0));
    round.pairs[pair.name] = cell;
  }
  round.otherCores = Math.max(...Object.values(round.pairs).map((c) => c.otherCores));
  round.loaded = round.otherCores > config.quiet;
  rounds.push(round);
  const line = pairs
    .map((p) => {
      const x = round.pairs[p.name];
      const control = x.signal === undefined ? '' : ` (bare+signal ${fmt(x.signal.rps)})`;
      return `${p.name} ${fmt(x.bare.rps)} / ${fmt(x.wrapped.rps)} = ${x.ratio.toFixed(3)}${control}`;
    })
    .join('; ');
  log(
    `  ${warmup ? 'warm-up' : `round ${round.round}`}: ${line}; other load ${round.otherCores.toFixed(2)} cores`,
  );
}

const measured = rounds.filter((r) => !r.warmup);
const quietRounds = measured.filter((r) => !r.loaded);
const summary = {};
for (const pair of pairs) {
  const rows = measured.map((r) => r.pairs[pair.name]);
  const ratios = rows.map((x) => x.ratio);
  const quietRatios = quietRounds.map((r) => r.pairs[pair.name].ratio);
  summary[pair.name] = {
    bareRps: median(rows.map((x) => x.bare.rps)),
    wrappedRps: median(rows.map((x) => x.wrapped.rps)),
    ratio: median(ratios),
    ratioMin: Math.min(...ratios),
    ratioMax: Math.max(...ratios),
    quietRounds: quietRatios.length,
    quietRatio: median(quietRatios),
    bareCpuPerRequest: median(rows.map((x) => x.bare.cpuPerRequest)),
    wrappedCpuPerRequest: median(rows.map((x) => x.wrapped.cpuPerRequest)),
    cpuRatio: median(rows.map((x) => x.cpuRatio)),
    bareClientCores: median(rows.map((x) => x.bare.clientCores)),
    wrappedClientCores: median(rows.map((x) => x.wrapped.clientCores)),
    serverCores: median(rows.flatMap((x) => [x.bare.serverCores, x.wrapped.serverCores])),
    goalMet: median(ratios) >= GOAL,
  };
  if (sides.includes('signal')) {
    Object.assign(summary[pair.name], {
      signalRps: median(rows.map((x) => x.signal.rps)),
      signalRatio: median(rows.map((x) => x.signalRatio)),
      signalCpuPerRequest: median(rows.map((x) => x.signal.cpuPerRequest)),
    });
  }
}

// Keep-alive holds: after the warm-up, connections should be reused, not opened.
const lateConnections = measured
  .flatMap((r) => Object.values(r.pairs))
  .reduce((n, cell) => n + sides.reduce((m, side) => m + cell[side].newConnections, 0), 0);

// Every request the client started reached the server exactly once (no hidden retries).
const stats = await serverStats();
const failures = rounds
  .flatMap((r) => Object.values(r.pairs))
  .reduce((n, cell) => n + sides.reduce((m, side) => m + cell[side].failed, 0), 0);

server.stop();
await agent?.close();

const environment = {
  date: new Date().toISOString(),
  node: process.version,
  nodeBundledUndici: process.versions.undici,
  undici: undiciVersion,
  cpus: cpus().length,
  availableParallelism: availableParallelism(),
  cpuModel: cpus()[0]?.model,
  platform: `${process.platform} ${process.arch}`,
};

if (args.json) {
  console.log(
    JSON.stringify(
      {
        environment,
        config,
        goal: GOAL,
        summary,
        rounds,
        server: { requests: stats.requests, connections: stats.connections, cpuMs: stats.cpu },
        clientRequests: started,
        connectionsOpenedAfterWarmup: lateConnections,
        failures,
      },
      null,
      2,
    ),
  );
} else {
  printTables();
}

if (failures > 0) {
  console.error(`fetch-overhead: ${failures} request(s) failed; first error:`, firstError);
  process.exitCode = 1;
}
if (stats.requests !== started) {
  console.error(
    `fetch-overhead: the server counted ${stats.requests} requests, the client started ${started}`,
  );
  process.exitCode = 1;
}

function fmt(n) {
  return Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '-';
}

function printTable(rows) {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => row[i].length)));
  for (const row of rows) console.log(row.map((cell, i) => cell.padStart(widths[i])).join('  '));
}

function printTables() {
  const control = sides.includes('signal');
  console.log('');
  console.log(
    `requests/s per round (${config.concurrency} in flight, ${config.duration} s per cell; ` +
      `order: b = bare, w = wrapped${control ? ', s = bare+signal' : ''}; ` +
      `* = other processes kept > ${config.quiet} core busy)`,
  );
  const header = ['round', 'order'];
  for (const p of pairs) {
    header.push(`${p.name}: bare`, 'wrapped', 'ratio');
    if (control) header.push('bare+signal', 'ratio');
  }
  header.push('other load');
  const rows = [header];
  for (const r of measured) {
    const row = [`${r.round}${r.loaded ? '*' : ''}`, r.order.map((side) => side[0]).join('')];
    for (const p of pairs) {
      const x = r.pairs[p.name];
      row.push(fmt(x.bare.rps), fmt(x.wrapped.rps), x.ratio.toFixed(3));
      if (control) row.push(fmt(x.signal.rps), x.signalRatio.toFixed(3));
    }
    row.push(r.otherCores.toFixed(2));
    rows.push(row);
  }
  const medianRow = ['median', ''];
  for (const p of pairs) {
    const s = summary[p.name];
    medianRow.push(fmt(s.bareRps), fmt(s.wrappedRps), s.ratio.toFixed(3));
    if (control) medianRow.push(fmt(s.signalRps), s.signalRatio.toFixed(3));
  }
  medianRow.push(median(measured.map((r) => r.otherCores)).toFixed(2));
  rows.push(medianRow);
  printTable(rows);

  console.log('');
  const summaryRows = [
    [
      'transport',
      'rps bare',
      'rps wrapped',
      'ratio',
      'ratio range',
      'ratio quiet',
      'CPU µs/req bare',
      'wrapped',
      'CPU ratio',
      'goal',
    ],
  ];
  for (const p of pairs) {
    const s = summary[p.name];
    summaryRows.push([
      p.name,
      fmt(s.bareRps),
      fmt(s.wrappedRps),
      s.ratio.toFixed(3),
      `${s.ratioMin.toFixed(3)}–${s.ratioMax.toFixed(3)}`,
      s.quietRounds === 0 ? '-' : `${s.quietRatio.toFixed(3)} (${s.quietRounds})`,
      s.bareCpuPerRequest.toFixed(0),
      s.wrappedCpuPerRequest.toFixed(0),
      s.cpuRatio.toFixed(3),
      `>= ${GOAL} ${s.goalMet ? 'met' : 'NOT met'}`,
    ]);
  }
  printTable(summaryRows);
  if (control) {
    console.log('');
    for (const p of pairs) {
      const s = summary[p.name];
      const total = s.wrappedCpuPerRequest - s.bareCpuPerRequest;
      const signal = s.signalCpuPerRequest - s.bareCpuPerRequest;
      console.log(
        `${p.name}: bare+signal/bare ${s.signalRatio.toFixed(3)}; CPU µs/req bare ` +
          `${s.bareCpuPerRequest.toFixed(0)}, +signal ${s.signalCpuPerRequest.toFixed(0)}, ` +
          `wrapped ${s.wrappedCpuPerRequest.toFixed(0)}: of the ${total.toFixed(0)} µs added, ` +
          `${signal.toFixed(0)} come with the signal alone`,
      );
    }
  }
  console.log('');
  console.log(
    'ratio = wrapped/bare requests/s, median of the per-round ratios; ratio quiet = the same ' +
      'over the rounds without *; CPU ratio = bare/wrapped client CPU time per request.',
  );
  const first = summary[pairs[0].name];
  console.log(
    `client ${first.bareClientCores.toFixed(2)} cores (bare), ${first.wrappedClientCores.toFixed(2)} ` +
      `(wrapped); server ${first.serverCores.toFixed(2)} cores; server counted ${stats.requests} requests on ${stats.connections} connections ` +
      `(${lateConnections} opened after the warm-up)`,
  );
  console.log(
    `node ${environment.node} (bundled undici ${environment.nodeBundledUndici})` +
      `${environment.undici ? `, npm undici ${environment.undici}` : ''}; ` +
      `${environment.availableParallelism} CPUs (${environment.cpuModel}); ${environment.date}`,
  );
}
