#!/usr/bin/env node
/**
 * Client CPU a request, in 50 ms bins, over the first 500 ms of bursts that
 * follow an idle pause: where in a burst one variant of
 * bench/undici-variants.mjs pays more than another. undici-overhead.mjs's
 * half-second slots are such bursts (a process idles while the others run);
 * this shows how a slot's cost is spread over it. One process: its figures
 * are one process's (processes of one build differ by 10–30 %), so compare
 * the shape across bins, and run each variant several times.
 *
 *   npm run build && node bench/tools/burst.mjs VARIANT [bursts=4] [idle-ms=11000]
 *
 * Prints, per bin, the CPU µs a request summed over the bursts, then the
 * requests each bin completed.
 */
import { startServer } from '../lib/child-server.mjs';
import { drive, setup, teardown } from '../undici-variants.mjs';

const BINS = 10;
const BIN_MS = 50;
const CONCURRENCY = 32;

const [variant, burstsArg = '4', idleArg = '11000'] = process.argv.slice(2);
if (variant === undefined || variant === '-h' || variant === '--help') {
  console.log('Usage: node bench/tools/burst.mjs VARIANT [bursts=4] [idle-ms=11000]');
  process.exit(variant === undefined ? 2 : 0);
}
const bursts = Number(burstsArg);
const idle = Number(idleArg);
for (const [name, value] of [
  ['bursts', bursts],
  ['idle-ms', idle],
]) {
  if (!Number.isInteger(value) || value < 1)
    throw new RangeError(`${name} must be an integer >= 1, got ${value}`);
}

const server = await startServer({ name: 'burst', maxSeconds: 900, bodyBytes: 64 });
const send = await setup(variant, `http://127.0.0.1:${server.port}/bench`);
await drive(send, variant, 30_000, CONCURRENCY);

const bins = Array.from({ length: BINS }, () => ({ requests: 0, cpu: 0 }));
for (let b = 0; b < bursts; b++) {
  await new Promise((resolve) => setTimeout(resolve, idle));
  const t0 = performance.now();
  const end = t0 + BINS * BIN_MS;
  let bin = 0;
  let done = 0;
  let cpu0 = process.cpuUsage();
  const close = () => {
    const cpu = process.cpuUsage(cpu0);
    bins[bin].requests += done;
    bins[bin].cpu += cpu.user + cpu.system;
    cpu0 = process.cpuUsage();
    done = 0;
  };
  const worker = async () => {
    while (performance.now() < end) {
      const status = await send();
      if (status !== 200) throw new Error(`${variant}: status ${status}`);
      done++;
      const k = Math.min(BINS - 1, Math.floor((performance.now() - t0) / BIN_MS));
      if (k !== bin) {
        close();
        bin = k;
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  close();
}
const µs = bins.map((b) => (b.requests === 0 ? '-' : (b.cpu / b.requests).toFixed(1)));
console.log(`${variant}: CPU µs a request by ${BIN_MS} ms bin: ${µs.join(' ')}`);
console.log(`${variant}: requests by bin: ${bins.map((b) => b.requests).join(' ')}`);
await teardown();
server.stop();
process.exit(0);
