#!/usr/bin/env node
/**
 * Bytes allocated a request by a variant of bench/undici-variants.mjs, by the
 * function that allocated them: V8's sampling heap profiler over `requests`
 * requests after a warm-up, with every sampled object kept in the profile
 * (those the young and the old generation collected too), so the figure is
 * what was allocated, not what survived.
 *
 *   npm run build && node bench/tools/heap-sample.mjs VARIANT [requests=50000] [warmup=40000] [top=25]
 *
 * Sampled every 256 bytes: the total repeated within 0.2 % over three
 * processes of one variant, but a single function's figure is an estimate
 * that moved by up to a third between processes (V8's inlining moves bytes
 * between a function and its caller): compare totals, read functions as
 * where to look.
 */
import { Session } from 'node:inspector/promises';
import { startServer } from '../lib/child-server.mjs';
import { drive, setup, teardown } from '../undici-variants.mjs';

const [variant, ...rest] = process.argv.slice(2);
if (variant === undefined || variant === '-h' || variant === '--help') {
  console.log('Usage: node bench/tools/heap-sample.mjs VARIANT [requests] [warmup] [top]');
  process.exit(variant === undefined ? 2 : 0);
}
const [requests, warmup, top] = [rest[0] ?? 50_000, rest[1] ?? 40_000, rest[2] ?? 25].map(Number);
for (const [name, value] of [
  ['requests', requests],
  ['warmup', warmup],
  ['top', top],
]) {
  if (!Number.isInteger(value) || value < 1)
    throw new RangeError(`${name} must be a positive integer, got ${value}`);
}

const server = await startServer({ name: 'heap-sample', maxSeconds: 600, bodyBytes: 64 });
const send = await setup(variant, `http://127.0.0.1:${server.port}/bench`);
await drive(send, variant, warmup, 32);
const session = new Session();
session.connect();
await session.post('HeapProfiler.enable');
await session.post('HeapProfiler.startSampling', {
  samplingInterval: 256,
  includeObjectsCollectedByMajorGC: true,
  includeObjectsCollectedByMinorGC: true,
});
await drive(send, variant, requests, 32);
const { profile } = await session.post('HeapProfiler.stopSampling');

const bytes = new Map();
let total = 0;
const visit = (node) => {
  const f = node.callFrame;
  const where = `${f.functionName || '(anonymous)'} ${f.url.replace(/.*\//, '')}:${f.lineNumber + 1}`;
  if (node.selfSize > 0) {
    bytes.set(where, (bytes.get(where) ?? 0) + node.selfSize);
    total += node.selfSize;
  }
  for (const child of node.children) visit(child);
};
visit(profile.head);
console.log(
  `${variant}: ${Math.round(total / requests)} bytes a request (${requests} requests after ${warmup})`,
);
for (const [where, n] of [...bytes].sort((a, b) => b[1] - a[1]).slice(0, top)) {
  console.log(`${(n / requests).toFixed(1).padStart(9)}  ${where}`);
}
await teardown();
server.stop();
process.exit(0);
