#!/usr/bin/env node
// What the policies do to an upstream, in real time on loopback:
//  1. outage amplification: 400 concurrent GETs, 4 attempts each, against a
//     server that answers 503 to everything; how many requests reach it.
//  2. quota: a server allowing 40 requests per second (fixed 1 s windows,
//     429 without Retry-After beyond); 400 requests arriving at 80/s, 6
//     attempts, 60 s deadline; 429s per success, with and without the
//     adaptive rate limiter.
// Usage: npm run build && node bench/policies.mjs [--json]
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { json: { type: 'boolean' }, help: { type: 'boolean' } } });
if (values.help) {
  console.log('node bench/policies.mjs [--json]   (run npm run build first)');
  process.exit(0);
}
let createFetch;
try {
  ({ createFetch } = await import('../dist/index.js'));
} catch {
  console.error('dist/ is missing: run `npm run build` first');
  process.exit(1);
}
const hardStop = setTimeout(() => {
  console.error('bench/policies.mjs: time limit reached');
  process.exit(1);
}, 180_000);
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

const rows = {
  outage: [
    await outage('no budget, no breaker', { budget: false, breaker: false }),
    await outage('budget only', { breaker: false }),
    await outage('defaults (budget + breaker)', {}),
  ],
  quota: [
    await quota('rateLimit: false, budget: false', { rateLimit: false, budget: false }),
    await quota('rateLimit: false (budget charges 429s)', { rateLimit: false }),
    await quota('defaults (adaptive)', {}),
  ],
};
if (values.json) console.log(JSON.stringify(rows, null, 2));
else {
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
