#!/usr/bin/env node
/**
 * Heap held by a request that waits on an open circuit (the breaker's
 * waiting room), per request: what `breaker.maxWaiting` bounds.
 *
 *   npm run build && node --expose-gc bench/tools/waiting-room-heap.mjs [--help]
 *
 * One `createFetch` client with the defaults but a transport that answers
 * the first request 503 (a circuit of `consecutiveFailures: 1` trips on it)
 * and never answers the next (the one probe then stays out, so every other
 * request keeps waiting). After a collection, `heapUsed` is read; then N
 * requests to distinct URLs are started and let settle into the room, and
 * after another collection it is read again. The difference over N is the
 * cost of one held request: the caller's promise, the logical request, its
 * flight, the room's waiter and its timer. No network: a held request never
 * reaches the transport.
 */
import { parseArgs } from 'node:util';
import { createFetch } from '../../dist/index.js';

const HELP = `Usage: npm run build && node --expose-gc bench/tools/waiting-room-heap.mjs [options]

Options:
  --requests <list>   comma-separated counts of requests held (default 1000,10000,50000)
  --rounds <n>        measurements of each count, the median printed (default 3)
  --json              print the results as JSON
  -h, --help          this help`;

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '1000,10000,50000' },
    rounds: { type: 'string', default: '3' },
    json: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (values.help) {
  console.log(HELP);
  process.exit(0);
}
if (typeof globalThis.gc !== 'function') {
  console.error('run with node --expose-gc');
  process.exit(2);
}
const counts = values.requests.split(',').map(Number);
if (!counts.every((n) => Number.isSafeInteger(n) && n > 0)) {
  throw new RangeError(`--requests must be integers > 0, got ${values.requests}`);
}
const rounds = Number(values.rounds);
if (!(Number.isSafeInteger(rounds) && rounds > 0)) {
  throw new RangeError(`--rounds must be an integer > 0, got ${values.rounds}`);
}

const turns = async (n) => {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
};

async function settledHeap() {
  for (let i = 0; i < 3; i++) {
    globalThis.gc();
    await turns(2);
  }
  return process.memoryUsage().heapUsed;
}

/** Bytes of heap per held request, holding `n`. */
async function measure(n) {
  let calls = 0;
  const transport = () =>
    calls++ === 0 ? Promise.resolve(new Response(null, { status: 503 })) : new Promise(() => {}); // the probe: never answered
  const controller = new AbortController();
  const fetch = createFetch({
    fetch: transport,
    breaker: { consecutiveFailures: 1, maxWaiting: Number.POSITIVE_INFINITY },
  });
  // Trip the circuit; that request's retry then waits too (it is not counted).
  const tripping = fetch('https://api.example.com/v1/items/trip', {
    signal: controller.signal,
  }).catch(() => {});
  await turns(20);
  const before = await settledHeap();
  const held = [];
  for (let i = 0; i < n; i++) {
    held.push(
      fetch(`https://api.example.com/v1/items/${i}`, { signal: controller.signal }).catch(() => {}),
    );
  }
  await turns(20);
  const after = await settledHeap();
  if (calls > 2) throw new Error(`held requests reached the transport (${calls} calls)`);
  controller.abort(new Error('done'));
  await Promise.all([tripping, ...held]);
  return (after - before) / n;
}

const results = [];
for (const n of counts) {
  const bytes = [];
  for (let r = 0; r < rounds; r++) bytes.push(await measure(n));
  bytes.sort((a, b) => a - b);
  results.push({ requests: n, bytesPerRequest: Math.round(bytes[Math.floor(rounds / 2)]) });
}
if (values.json) console.log(JSON.stringify({ node: process.version, results }));
else {
  console.log(`Node ${process.version}: heap held per request waiting on an open circuit`);
  for (const { requests, bytesPerRequest } of results) {
    console.log(`${String(requests).padStart(7)} held: ${bytesPerRequest} B a request`);
  }
}
