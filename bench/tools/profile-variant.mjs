#!/usr/bin/env node
/**
 * One variant of bench/undici-variants.mjs for a fixed number of requests,
 * in this process, against the loopback server of bench/lib/child-server.mjs:
 * for CPU profiles whose self times can be divided by a known request count
 * (bench/tools/cpuprofile-diff.mjs). Prints requests/s and client CPU µs a request.
 *
 *   node --cpu-prof --cpu-prof-interval 50 --cpu-prof-dir=.prof/createAgent \
 *     bench/tools/profile-variant.mjs createAgent [requests=200000] [concurrency=32] [warmup]
 *   STAUNCH_DIST=/tmp/base/dist node … bench/tools/profile-variant.mjs createAgent   # another build
 *
 * A warm-up of 10 % of the requests (at least 10,000), or `warmup` requests,
 * runs first; the profile covers it too (count it: requests × 1.1).
 */
import { startServer } from '../lib/child-server.mjs';
import { drive, setup, teardown } from '../undici-variants.mjs';

const [variant, requestsArg, concurrencyArg, warmupArg] = process.argv.slice(2);
if (variant === undefined || variant === '-h' || variant === '--help') {
  console.log(
    'Usage: node bench/tools/profile-variant.mjs VARIANT [requests] [concurrency] [warmup]',
  );
  process.exit(variant === undefined ? 2 : 0);
}
const requests = Number(requestsArg ?? 200_000);
const concurrency = Number(concurrencyArg ?? 32);
const warmup =
  warmupArg === undefined ? Math.max(10_000, Math.round(requests / 10)) : Number(warmupArg);
for (const [name, value] of [
  ['requests', requests],
  ['concurrency', concurrency],
  ['warmup', warmup],
]) {
  if (!Number.isInteger(value) || value < 0)
    throw new RangeError(`${name} must be an integer >= 0, got ${value}`);
}
const server = await startServer({ name: 'profile-variant', maxSeconds: 900, bodyBytes: 64 });
const send = await setup(variant, `http://127.0.0.1:${server.port}/bench`);

const run = (n) => drive(send, variant, n, concurrency);

await run(warmup);
const cpu0 = process.cpuUsage();
const t0 = performance.now();
await run(requests);
const ms = performance.now() - t0;
const cpu = process.cpuUsage(cpu0);
console.log(
  `${variant}: ${requests} requests (+${warmup} warm-up), ${Math.round((requests / ms) * 1000)} rps, ` +
    `client CPU ${((cpu.user + cpu.system) / requests).toFixed(2)} µs a request`,
);
await teardown();
server.stop();
process.exit(0);
