#!/usr/bin/env node
/**
 * A fleet sharing its policy state through Redis, measured with real
 * processes (startFleet), a redis-server of its own and a loopback upstream.
 *
 *   npm run build && node bench/redis-fleet.mjs quota [options]
 *   npm run build && node bench/redis-fleet.mjs start [options]
 *
 * quota: P processes send `--requests` requests each, one every `--interval`
 *   ms, with the defaults (adaptive rate limiter, retries) against an upstream
 *   that allows `--quota` requests per fixed one-second window (429 beyond, no
 *   hint). Runs alternate local state and the shared store (L S S L …) so that
 *   drift of the machine falls on both; prints 429s per success and goodput.
 * start: P processes each create an ioredis client and at once fire
 *   `--requests` requests through a fixed `{ rps, burst }` limit shared in
 *   Redis; the baseline run waits for the client to be ready first. Prints the
 *   fleet's send rate, (sent − burst) / (last − first arrival), against rps.
 *
 * Member modules: test/redis/members/quota.mjs and fire-at-start.mjs.
 */
import { execSync } from 'node:child_process';
import { createServer } from 'node:http';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { startRedis } from './lib/redis-server.mjs';

const HELP = `Usage: npm run build && node bench/redis-fleet.mjs quota|start [options]

Options:
  --processes <n>   fleet size                                      (default 4)
  --runs <n>        runs of each variant                            (default 2 quota, 5 start)
  --requests <n>    requests per process                            (default 80 quota, 30 start)
  --interval <ms>   quota: ms between two requests of a process     (default 40)
  --quota <n>       quota: requests per one-second window           (default 40)
  --timeout <ms>    quota: the shared store's decision timeout      (default: the store's, 50)
  --rps <n>         start: the shared fixed limit                   (default 40)
  --burst <n>       start: its burst                                (default 5)
  --dist <dir>      the compiled staunch to load                    (default dist)
  --json            print JSON instead of tables
  -h, --help        this help

Redis: its own redis-server on a free port, or REDIS_URL if set.`;

const { values: opt, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    processes: { type: 'string', default: '4' },
    runs: { type: 'string' },
    requests: { type: 'string' },
    interval: { type: 'string', default: '40' },
    quota: { type: 'string', default: '40' },
    timeout: { type: 'string' },
    rps: { type: 'string', default: '40' },
    burst: { type: 'string', default: '5' },
    dist: { type: 'string', default: 'dist' },
    json: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
const scenario = positionals[0];
if (opt.help || (scenario !== 'quota' && scenario !== 'start')) {
  console.log(HELP);
  process.exit(opt.help ? 0 : 2);
}
const P = Number(opt.processes);
const RUNS = Number(opt.runs ?? (scenario === 'quota' ? 2 : 5));
const REQUESTS = Number(opt.requests ?? (scenario === 'quota' ? 80 : 30));
const dist = resolve(opt.dist);
const members = new URL('../test/redis/members/', import.meta.url);
let startFleet;
try {
  ({ startFleet } = await import(pathToFileURL(`${dist}/lab/index.js`).href));
} catch (error) {
  console.error(`cannot load ${dist} (run \`npm run build\` first): ${error.message}`);
  process.exit(1);
}

const hardStop = setTimeout(() => {
  console.error('bench/redis-fleet.mjs: time limit reached');
  process.exit(1);
}, 900_000);
hardStop.unref();

/** A loopback upstream; `respond(now)` picks the status of each request. */
async function upstream(respond) {
  const arrivals = [];
  const statuses = [];
  const server = createServer((_req, res) => {
    const now = performance.now();
    const status = respond(now);
    arrivals.push(now);
    statuses.push(status);
    res.statusCode = status;
    res.end();
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  server.keepAliveTimeout = 60_000;
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    arrivals,
    statuses,
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(r);
      }),
  };
}

async function fleet(module, store, storeOptions, input) {
  const running = startFleet({
    processes: P,
    module: new URL(module, members),
    store,
    storeOptions,
    input,
    timeout: 300_000,
  });
  try {
    return await running.results;
  } finally {
    await running.stop();
  }
}

async function quotaRun(redisUrl, kind, index) {
  const QUOTA = Number(opt.quota);
  const windows = new Map();
  const up = await upstream(() => {
    const w = Math.floor(Date.now() / 1000);
    const n = (windows.get(w) ?? 0) + 1;
    windows.set(w, n);
    return n > QUOTA ? 429 : 200;
  });
  try {
    const storeOptions = {
      prefix: `staunch-bench-fleet:${process.pid}:${index}:`,
      ...(opt.timeout !== undefined && { timeout: Number(opt.timeout) }),
    };
    const results = await fleet('quota.mjs', kind === 'local' ? 'local' : redisUrl, storeOptions, {
      dist,
      url: up.url,
      requests: REQUESTS,
      interval: Number(opt.interval),
    });
    const ok = up.statuses.filter((s) => s === 200).length;
    const tooMany = up.statuses.length - ok;
    const ms = Math.max(...results.map((r) => r.ms));
    return {
      kind,
      ok,
      tooMany,
      perSuccess: tooMany / ok,
      succeeded: results.reduce((sum, r) => sum + (r.counts.ok ?? 0), 0),
      ms,
      goodput: (ok / ms) * 1000,
      degraded: results.filter((r) => r.statuses.length > 0).length,
    };
  } finally {
    await up.close();
  }
}

async function startRun(redisUrl, kind, index) {
  const rateLimit = { rps: Number(opt.rps), burst: Number(opt.burst) };
  const up = await upstream(() => 200);
  try {
    const results = await fleet('fire-at-start.mjs', 'local', undefined, {
      dist,
      url: up.url,
      redis: redisUrl,
      prefix: `staunch-bench-start:${process.pid}:${index}:`,
      storeOptions: {},
      requests: REQUESTS,
      rateLimit,
      connectFirst: kind === 'ready first',
    });
    const sent = up.arrivals.length;
    const span = (up.arrivals.at(-1) - up.arrivals[0]) / 1000;
    return {
      kind,
      sent,
      span,
      rate: (sent - rateLimit.burst) / span,
      degraded: results.filter((r) => r.statuses.length > 0).length,
    };
  } finally {
    await up.close();
  }
}

const redis = await startRedis();
const rows = [];
try {
  const variants = scenario === 'quota' ? ['local', 'shared'] : ['at creation', 'ready first'];
  for (let i = 0; i < RUNS; i++) {
    // A B B A …: drift of the machine falls on both.
    const order = i % 2 === 0 ? variants : [...variants].reverse();
    for (const kind of order) {
      const run = scenario === 'quota' ? quotaRun : startRun;
      rows.push(await run(redis.url, kind, rows.length));
    }
  }
} finally {
  await redis.stop();
}

const env = { node: process.version, uptime: execSync('uptime').toString().trim(), processes: P };
if (opt.json) {
  console.log(JSON.stringify({ scenario, env, rows }, null, 2));
} else if (scenario === 'quota') {
  console.log(
    `${P} processes × ${REQUESTS} requests every ${opt.interval} ms, quota ${opt.quota}/s; ${env.node}; ${env.uptime}`,
  );
  console.log('state   429s  successes  per success  ms      successes/s  degraded');
  for (const r of rows) {
    console.log(
      `${r.kind.padEnd(7)} ${String(r.tooMany).padStart(4)}  ${String(r.ok).padStart(9)}  ${r.perSuccess.toFixed(3).padStart(11)}  ${String(r.ms).padEnd(6)}  ${r.goodput.toFixed(1).padStart(11)}  ${r.degraded} of ${P}`,
    );
  }
  const sum = (kind) => {
    const list = rows.filter((r) => r.kind === kind);
    const tooMany = list.reduce((s, r) => s + r.tooMany, 0);
    const ok = list.reduce((s, r) => s + r.ok, 0);
    return tooMany / ok;
  };
  console.log(
    `429s per success, all runs: local ${sum('local').toFixed(3)}, shared ${sum('shared').toFixed(3)} (shared / local ${(sum('shared') / sum('local')).toFixed(2)})`,
  );
} else {
  console.log(
    `${P} processes × ${REQUESTS} requests at once, shared { rps: ${opt.rps}, burst: ${opt.burst} }; ${env.node}; ${env.uptime}`,
  );
  console.log('client        sent  span s  req/s   / rps  degraded');
  for (const r of rows) {
    console.log(
      `${r.kind.padEnd(12)}  ${String(r.sent).padStart(4)}  ${r.span.toFixed(2).padStart(6)}  ${r.rate.toFixed(1).padStart(5)}  ${(r.rate / Number(opt.rps)).toFixed(2).padStart(5)}  ${r.degraded} of ${P}`,
    );
  }
}
