#!/usr/bin/env node
/**
 * What `createAgent` adds per request for a legacy caller, without a
 * network: attempt 1's path (dist/undici/first.js, `FirstAttempt`) over a stub
 * dispatch that answers each request with a 200, four headers and a 64-byte
 * body on undici 7's legacy handler API, 32 requests at a time. `floor` is
 * the same loop with a handler that only forwards (the least any layer
 * between undici and its caller costs). The loopback benchmark
 * (undici-overhead.mjs) swings by more than these costs; this one is steady
 * to a few per cent, and tells which part of the path costs what.
 *
 *   npm run build && node bench/tools/agent-stub-cost.mjs [--rounds 5] [--requests 640000]
 *   STAUNCH_DIST=/tmp/base/dist node bench/tools/agent-stub-cost.mjs   # another build
 *   node --cpu-prof bench/tools/agent-stub-cost.mjs --only defaults     # floor and one variant, to profile
 */
import { parseArgs } from 'node:util';
import { Relay } from '../undici-variants.mjs';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    requests: { type: 'string', default: '640000' },
    only: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (values.help) {
  console.log(
    'Usage: npm run build && node bench/tools/agent-stub-cost.mjs [--rounds N] [--requests N] [--only VARIANT]',
  );
  process.exit(0);
}
const rounds = Number(values.rounds);
const requests = Number(values.requests);
for (const [name, n, min] of [
  ['rounds', rounds, 1],
  ['requests', requests, 32],
]) {
  if (!Number.isInteger(n) || n < min) {
    console.error(`agent-stub-cost: --${name} must be an integer >= ${min}, got ${n}`);
    process.exit(2);
  }
}

const dist = process.env.STAUNCH_DIST ?? new URL('../../dist', import.meta.url).pathname;
const { FirstAttempt } = await import(`${dist}/undici/first.js`);
const { currentApi } = await import(`${dist}/undici/legacy.js`);
const { resolveUndiciRuntime } = await import(`${dist}/undici/client.js`);

const raw = [
  ['content-length', '64'],
  ['date', 'Wed, 02 Dec 2026 04:00:00 GMT'],
  ['connection', 'keep-alive'],
  ['keep-alive', 'timeout=5'],
]
  .flat()
  .map((s) => Buffer.from(s, 'latin1'));
const chunk = Buffer.alloc(64);
const noop = () => {};
const pending = [];
const dispatch = (_opts, handler) => {
  pending.push(handler);
  return true;
};
let completed = 0;

class Caller {
  onConnect(abort) {
    this.abort = abort;
  }
  onHeaders(status) {
    this.status = status;
    return true;
  }
  onData() {
    return true;
  }
  onComplete() {
    completed++;
  }
  onError(error) {
    throw error;
  }
}

const VARIANTS = {
  floor: undefined,
  'no retries, deadlines or policies': {
    breaker: false,
    budget: false,
    rateLimit: false,
    retry: false,
    timeout: false,
  },
  'no policies': { breaker: false, budget: false, rateLimit: false },
  'no deadlines': { timeout: false },
  defaults: {},
};

function round(send, n) {
  const t = process.hrtime.bigint();
  for (let i = 0; i < n; i += 32) {
    for (let k = 0; k < 32; k++) {
      // A fresh origin string per request, as undici.request's URL parsing gives one.
      send({ origin: new URL('http://127.0.0.1:1/').origin, path: '/bench', method: 'GET' });
    }
    for (const h of pending) {
      h.onConnect(noop);
      h.onHeaders(200, raw, noop, 'OK');
      h.onData(chunk);
      h.onComplete(null);
    }
    pending.length = 0;
  }
  return Number(process.hrtime.bigint() - t) / n;
}

if (values.only !== undefined && !(values.only in VARIANTS)) {
  console.error(`agent-stub-cost: --only must be one of ${Object.keys(VARIANTS).join(', ')}`);
  process.exit(2);
}
const chosen = Object.entries(VARIANTS).filter(
  ([name]) => values.only === undefined || name === 'floor' || name === values.only,
);

const results = [];
for (const [name, options] of chosen) {
  const client = options === undefined ? undefined : resolveUndiciRuntime(options, 'options');
  const send =
    client === undefined
      ? (opts) => dispatch(opts, new Relay(new Caller()))
      : (opts) => new FirstAttempt(client, currentApi(new Caller())).run(dispatch, opts, false);
  const before = completed;
  const warm = Math.round(requests / 2);
  round(send, warm);
  const times = [];
  for (let r = 0; r < rounds; r++) times.push(round(send, requests));
  const sent = Math.ceil(warm / 32) * 32 + rounds * Math.ceil(requests / 32) * 32;
  if (completed - before !== sent) {
    throw new Error(`${name}: ${completed - before} of ${sent} requests completed`);
  }
  times.sort((a, b) => a - b);
  results.push([name, times[Math.floor(times.length / 2)], times[0], times.at(-1)]);
}
const floor = results[0][1];
console.log(
  `agent-stub-cost: ${requests} requests × ${rounds} rounds per variant, node ${process.version}`,
);
console.log('variant                              ns/request (median, min–max)   over floor');
for (const [name, median, min, max] of results) {
  const over = name === 'floor' ? '' : `${Math.round(median - floor)}`.padStart(6);
  console.log(
    `${name.padEnd(36)} ${median.toFixed(0).padStart(5)} (${min.toFixed(0)}–${max.toFixed(0)})`.padEnd(
      67,
    ) + over,
  );
}
