#!/usr/bin/env node
/**
 * The latency cost of a Redis-backed decision: p50/p99 per request of a
 * createFetch client with memoryStore() against the same client with
 * redisStore(), same run, on loopback (a redis-server of its own on a free
 * port, no persistence; a keep-alive HTTP server in a child process).
 *
 *   npm run build && node bench/redis-latency.mjs [--help]
 *
 * Requests are sent one after another (or `--concurrency` at a time), in
 * rounds that alternate the variants (A B B A …) so that drift of the machine
 * falls on both. Two policy sets: the defaults (per request: budget deposit,
 * breaker admit, breaker record; the adaptive limiter makes no store call
 * until a 429) and a fixed rate limit (plus one token take). A third table
 * times one store decision (breaker admit) on its own.
 */
import { fork } from 'node:child_process';
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { startRedis } from './lib/redis-server.mjs';

const HELP = `Usage: npm run build && node bench/redis-latency.mjs [options]

Options:
  --requests <n>      requests per variant per round          (default 2000)
  --rounds <n>        measured rounds                         (default 6)
  --warmup <n>        requests per variant before measuring   (default 500)
  --concurrency <n>   requests in flight                      (default 1)
  --dist <dir>        the compiled staunch to load            (default dist)
  --json              print JSON instead of tables
  -h, --help          this help

Redis: its own redis-server on a free port, or REDIS_URL if set.`;

const { values: opt } = parseArgs({
  options: {
    requests: { type: 'string', default: '2000' },
    rounds: { type: 'string', default: '6' },
    warmup: { type: 'string', default: '500' },
    concurrency: { type: 'string', default: '1' },
    dist: { type: 'string', default: 'dist' },
    json: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (opt.help) {
  console.log(HELP);
  process.exit(0);
}
const REQUESTS = Number(opt.requests);
const ROUNDS = Number(opt.rounds);
const WARMUP = Number(opt.warmup);
const CONCURRENCY = Number(opt.concurrency);

const dist = resolve(opt.dist);
let staunch;
let staunchRedis;
try {
  staunch = await import(pathToFileURL(`${dist}/index.js`).href);
  staunchRedis = await import(pathToFileURL(`${dist}/redis/index.js`).href);
} catch (error) {
  console.error(`cannot load ${dist} (run \`npm run build\` first): ${error.message}`);
  process.exit(1);
}
const { Redis } = await import('ioredis');

const hardStop = setTimeout(() => {
  console.error('bench/redis-latency.mjs: time limit reached');
  process.exit(1);
}, 600_000);
hardStop.unref();

function startHttp() {
  const child = fork(new URL('./lib/server.mjs', import.meta.url), ['600', '64'], {
    stdio: 'inherit',
  });
  return new Promise((resolveStart) => {
    child.once('message', (m) => resolveStart({ url: `http://127.0.0.1:${m.port}`, child }));
  });
}

function quantile(sorted, q) {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

async function timeRequests(fetch, url, n, into) {
  let next = 0;
  const worker = async () => {
    while (next < n) {
      next++;
      const start = performance.now();
      const res = await fetch(url);
      await res.arrayBuffer();
      into?.push(performance.now() - start);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
}

const redis = await startRedis();
const http = await startHttp();
const client = new Redis(redis.url);
try {
  const store = staunchRedis.redisStore({ client, prefix: `bench:${process.pid}:` });
  const degraded = [];
  store.onStatus((s) => degraded.push(s));
  const sets = {
    defaults: {},
    'fixed rate': { rateLimit: { rps: 1e6, burst: 1e6 } },
  };
  const variants = [];
  for (const [set, options] of Object.entries(sets)) {
    variants.push({ set, store: 'memory', fetch: staunch.createFetch({ ...options }) });
    variants.push({ set, store: 'redis', fetch: staunch.createFetch({ ...options, store }) });
  }
  for (const v of variants) {
    v.samples = [];
    await timeRequests(v.fetch, `${http.url}/warm`, WARMUP);
  }
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? variants : [...variants].reverse();
    for (const v of order)
      await timeRequests(v.fetch, `${http.url}/r${round}`, REQUESTS, v.samples);
  }
  // One decision on its own: breaker admit, memory vs redis.
  const { breakerAdmit } = staunch;
  const cfg = {
    failureRatio: 0.5,
    minimumVolume: 20,
    window: 10_000,
    breakDuration: 5_000,
    maxBreakDuration: 60_000,
    halfOpenProbes: 1,
    consecutiveFailures: 0,
  };
  const memory = staunch.memoryStore();
  const decisions = { memory: [], redis: [] };
  for (let i = 0; i < ROUNDS * REQUESTS; i++) {
    let t = performance.now();
    memory.run('breaker:bench', breakerAdmit, { cfg, leaseMs: 31_000 }, Date.now());
    decisions.memory.push(performance.now() - t);
    t = performance.now();
    await store.run('breaker:bench', breakerAdmit, { cfg, leaseMs: 31_000 }, Date.now());
    decisions.redis.push(performance.now() - t);
  }

  const rows = variants.map((v) => {
    const s = v.samples.sort((a, b) => a - b);
    return {
      set: v.set,
      store: v.store,
      n: s.length,
      p50: quantile(s, 0.5),
      p99: quantile(s, 0.99),
    };
  });
  const decisionRows = Object.entries(decisions).map(([name, list]) => {
    const s = list.sort((a, b) => a - b);
    return { store: name, n: s.length, p50: quantile(s, 0.5), p99: quantile(s, 0.99) };
  });
  const env = {
    node: process.version,
    redis: (await client.info('server')).match(/redis_version:(\S+)/)?.[1],
    concurrency: CONCURRENCY,
  };
  if (opt.json) {
    console.log(JSON.stringify({ env, requests: rows, decision: decisionRows, degraded }, null, 2));
  } else {
    const ms = (x) => `${(x * 1000).toFixed(0).padStart(6)} µs`;
    console.log(
      `node ${env.node}, redis ${env.redis}, concurrency ${CONCURRENCY}, ${ROUNDS} × ${REQUESTS} requests per variant`,
    );
    console.log('\nper request (createFetch → loopback HTTP)');
    console.log('policies     store      p50        p99');
    for (const r of rows)
      console.log(`${r.set.padEnd(12)} ${r.store.padEnd(8)} ${ms(r.p50)} ${ms(r.p99)}`);
    for (const set of Object.keys(sets)) {
      const [m, r] = rows.filter((x) => x.set === set);
      console.log(
        `${set}: redis adds ${ms(r.p50 - m.p50).trim()} at p50, ${ms(r.p99 - m.p99).trim()} at p99`,
      );
    }
    console.log('\none decision (breaker admit)');
    for (const r of decisionRows)
      console.log(`${r.store.padEnd(8)} p50 ${ms(r.p50)}  p99 ${ms(r.p99)}`);
    if (degraded.length > 0)
      console.log(`\nWARNING: the store degraded during the run: ${JSON.stringify(degraded)}`);
  }
} finally {
  client.disconnect();
  http.child.kill();
  await redis.stop();
}
