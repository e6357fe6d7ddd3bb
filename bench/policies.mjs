#!/usr/bin/env node
// What the policies do to an upstream, in real time on loopback:
//  1. outage amplification: 400 concurrent GETs, 4 attempts each, against a
//     server that answers 503 to everything; how many requests reach it.
//  2. quota: a server allowing 40 requests per second (fixed 1 s windows,
//     429 without Retry-After beyond); 400 requests arriving at 80/s, 6
//     attempts, 60 s deadline; 429s per success, with and without the
//     adaptive rate limiter.
//  3. issue 9's limiter cases (--only limiter runs these alone):
//     a. a sequential client, server alternating 404 and `429 Retry-After: 0`,
//        `retry: false`, 40 requests: how long they take;
//     b. one 429 on a client's first request, then a sequential loop for 2 s:
//        requests completed (a fresh client without the 429 as the baseline);
//     c. a token-bucket quota of 40 req/s (burst 5) answering
//        `429 Retry-After: 1`, 30 concurrent loops for 4 s: successes, 429s.
// Usage: npm run build && node bench/policies.mjs [--json] [--only limiter] [--runs N]
// STAUNCH_DIST=/path/to/dist measures another build (e.g. main's) with the same script.
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    json: { type: 'boolean' },
    help: { type: 'boolean' },
    only: { type: 'string' },
    runs: { type: 'string', default: '3' },
  },
});
if (values.help) {
  console.log('node bench/policies.mjs [--json]   (run npm run build first)');
  process.exit(0);
}
let createFetch;
try {
  const dist = process.env.STAUNCH_DIST ?? new URL('../dist', import.meta.url).pathname;
  ({ createFetch } = await import(`${dist}/index.js`));
} catch {
  console.error('dist/ is missing: run `npm run build` first');
  process.exit(1);
}
const hardStop = setTimeout(() => {
  console.error('bench/policies.mjs: time limit reached');
  process.exit(1);
}, 600_000);
hardStop.unref();

async function server(handler) {
  const s = createServer(handler);
  s.keepAliveTimeout = 5000;
  await new Promise((r) => s.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${s.address().port}`,
    close: () => new Promise((r) => s.close(r)),
  };
}

const settle = (p) =>
  p.then(
    async (r) => {
      await r.arrayBuffer();
      return r.status;
    },
    (e) => e.code ?? 'error',
  );

async function outage(label, options) {
  let received = 0;
  const s = await server((_req, res) => {
    received++;
    res.statusCode = 503;
    res.end();
  });
  const fetch = createFetch({ retry: 4, ...options });
  await Promise.all(Array.from({ length: 400 }, (_, i) => settle(fetch(`${s.url}/${i}`))));
  await s.close();
  return { label, logical: 400, received, amplification: received / 400 };
}

async function quota(label, options) {
  const windows = new Map();
  let tooMany = 0;
  const s = await server((_req, res) => {
    const w = Math.floor(Date.now() / 1000);
    const n = (windows.get(w) ?? 0) + 1;
    windows.set(w, n);
    if (n > 40) {
      tooMany++;
      res.statusCode = 429;
    }
    res.end();
  });
  const fetch = createFetch({ retry: 6, timeout: { total: 60_000 }, ...options });
  const start = Date.now();
  const results = await Promise.all(
    Array.from({ length: 400 }, async (_, i) => {
      await new Promise((r) => setTimeout(r, i * 12.5));
      return settle(fetch(`${s.url}/${i}`));
    }),
  );
  const seconds = (Date.now() - start) / 1000;
  await s.close();
  const ok = results.filter((r) => r === 200).length;
  return {
    label,
    success: ok / 400,
    tooMany,
    tooManyPerSuccess: tooMany / ok,
    goodput: ok / seconds,
    seconds,
  };
}

async function alternating(label, options) {
  let n = 0;
  const s = await server((_req, res) => {
    if (n++ % 2 === 0) res.statusCode = 404;
    else {
      res.statusCode = 429;
      res.setHeader('retry-after', '0');
    }
    res.end();
  });
  const fetch = createFetch({ retry: false, ...options });
  const start = performance.now();
  for (let i = 0; i < 40; i++) await settle(fetch(`${s.url}/${i}`));
  const ms = performance.now() - start;
  await s.close();
  return { label, requests: 40, ms: Math.round(ms) };
}

async function firstRefused(label, refuseFirst) {
  let n = 0;
  const s = await server((_req, res) => {
    res.statusCode = n++ === 0 && refuseFirst ? 429 : 200;
    res.end();
  });
  const fetch = createFetch({ retry: false });
  const start = performance.now();
  let done = 0;
  while (performance.now() - start < 2_000) {
    await settle(fetch(`${s.url}/${done}`));
    done++;
  }
  await s.close();
  return { label, completedIn2s: done };
}

async function bucketQuota(label, options) {
  const rate = 40;
  const burst = 5;
  let tokens = burst;
  let at = performance.now();
  let tooMany = 0;
  let ok = 0;
  const s = await server((_req, res) => {
    const now = performance.now();
    tokens = Math.min(burst, tokens + ((now - at) * rate) / 1000);
    at = now;
    if (tokens >= 1) {
      tokens -= 1;
      ok++;
    } else {
      tooMany++;
      res.statusCode = 429;
      res.setHeader('retry-after', '1');
    }
    res.end();
  });
  const fetch = createFetch(options);
  const start = performance.now();
  const until = start + 4_000;
  let successes = 0;
  await Promise.all(
    Array.from({ length: 30 }, async () => {
      while (performance.now() < until) {
        const r = await settle(fetch(`${s.url}/`));
        if (r === 200 && performance.now() <= until) successes++;
      }
    }),
  );
  await s.close();
  return { label, successes, tooMany, tooManyPerSuccess: +(tooMany / Math.max(1, ok)).toFixed(3) };
}

const plain = { rateLimit: false, budget: false, breaker: false };
const runs = Number(values.runs);
const rows = {};
if (values.only !== 'limiter') {
  rows.outage = [
    await outage('no budget, no breaker', { budget: false, breaker: false }),
    await outage('budget only', { breaker: false }),
    await outage('defaults (budget + breaker)', {}),
  ];
  rows.quota = [
    await quota('rateLimit: false, budget: false', { rateLimit: false, budget: false }),
    await quota('rateLimit: false (budget charges 429s)', { rateLimit: false }),
    await quota('defaults (adaptive)', {}),
  ];
}
// Each pair interleaved, so that both sides see the same machine load.
rows.alternating = [];
rows.firstRefused = [];
rows.bucket = [];
for (let i = 0; i < runs; i++) {
  rows.alternating.push(await alternating('rateLimit: false', { rateLimit: false }));
  rows.alternating.push(await alternating('defaults (adaptive)', {}));
  rows.firstRefused.push(await firstRefused('fresh client', false));
  rows.firstRefused.push(await firstRefused('429 on the first request', true));
  rows.bucket.push(await bucketQuota('plain loop (no policies)', plain));
  rows.bucket.push(await bucketQuota('defaults (adaptive)', {}));
}
if (values.json) console.log(JSON.stringify(rows, null, 2));
else {
  if (rows.outage) {
    console.log('outage: 400 concurrent GETs × 4 attempts, upstream always 503');
    console.table(rows.outage);
    console.log('quota: 40 req/s upstream, 400 requests at 80/s, 6 attempts, 60 s deadline');
    console.table(
      rows.quota.map((r) => ({
        ...r,
        goodput: +r.goodput.toFixed(1),
        tooManyPerSuccess: +r.tooManyPerSuccess.toFixed(3),
      })),
    );
  }
  console.log('sequential, 404 / 429 Retry-After: 0 alternating, retry: false, 40 requests');
  console.table(rows.alternating);
  console.log('sequential loop for 2 s, with and without a 429 on the first request');
  console.table(rows.firstRefused);
  console.log(
    'token bucket 40/s burst 5, 429 Retry-After: 1, 30 loops for 4 s (at most 165; ≈ 130 honouring the first Retry-After)',
  );
  console.table(rows.bucket);
}
