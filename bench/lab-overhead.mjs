#!/usr/bin/env node
/**
 * Success-path overhead of staunch and of the peers the lab compares it with:
 * requests/s of each client, with its retry settings on, as a ratio to bare
 * `undici.request` on the same keep-alive loopback server (bench/lib/server.mjs,
 * a child process). Rounds are interleaved (every variant once per round, the
 * order rotating) so the machine's drift falls on all; the ratio is taken
 * within each round, then the median over rounds.
 *
 *   npm run build && node bench/lab-overhead.mjs [--rounds 8] [--duration 1] [--concurrency 32]
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Agent, request } from 'undici';
import { peers } from './peers/index.mjs';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '8' },
    duration: { type: 'string', default: '1' },
    concurrency: { type: 'string', default: '32' },
    help: { type: 'boolean' },
  },
});
if (values.help) {
  console.log(
    'npm run build && node bench/lab-overhead.mjs [--rounds 8] [--duration 1] [--concurrency 32]',
  );
  process.exit(0);
}
let createFetch;
try {
  ({ createFetch } = await import('../dist/index.js'));
} catch {
  console.error('dist/ is missing: run `npm run build` first');
  process.exit(1);
}
const rounds = Number(values.rounds);
const duration = Number(values.duration) * 1000;
const concurrency = Number(values.concurrency);
const hardStop = setTimeout(() => {
  console.error('bench/lab-overhead.mjs: time limit reached');
  process.exit(1);
}, 600_000);
hardStop.unref();

const server = fork(fileURLToPath(new URL('./lib/server.mjs', import.meta.url)), ['600', '64']);
const port = await new Promise((resolve) =>
  server.on('message', (m) => m?.type === 'listening' && resolve(m.port)),
);
const url = `http://127.0.0.1:${port}/`;
const headers = { 'x-lab-id': '0' };

const agent = new Agent();
const settings = { attempts: 6, deadline: 60_000, outcome: () => {} };
const variants = [
  {
    name: 'undici.request (bare)',
    run: async () => {
      const res = await request(url, { dispatcher: agent, headers });
      await res.body.dump();
    },
  },
  { name: 'fetch (bare)', run: async () => (await fetch(url, { headers })).arrayBuffer() },
  {
    name: 'staunch createFetch',
    run: (() => {
      const f = createFetch();
      return async () => (await f(url, { headers })).arrayBuffer();
    })(),
  },
];
for (const peer of peers) {
  const send = await peer.create(settings);
  const signal = new AbortController().signal;
  variants.push({ name: peer.name, run: () => send(url, headers, signal) });
}

async function measure(run) {
  const end = performance.now() + duration;
  let done = 0;
  const lane = async () => {
    while (performance.now() < end) {
      await run();
      done++;
    }
  };
  const began = performance.now();
  await Promise.all(Array.from({ length: concurrency }, lane));
  return (done * 1000) / (performance.now() - began);
}

const ratios = variants.map(() => []);
const rates = variants.map(() => []);
for (let r = -1; r < rounds; r++) {
  const order = variants.map((_, i) => (i + Math.max(0, r)) % variants.length);
  const got = new Array(variants.length);
  for (const i of order) got[i] = await measure(variants[i].run);
  if (r < 0) continue; // warm-up round
  for (let i = 0; i < variants.length; i++) {
    rates[i].push(got[i]);
    ratios[i].push(got[i] / got[0]);
  }
  process.stderr.write(`round ${r + 1}/${rounds}\n`);
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(
  `node ${process.version}, ${rounds} rounds × ${duration / 1000} s, concurrency ${concurrency}`,
);
console.log('client                    req/s (median)   ratio to undici.request');
for (let i = 0; i < variants.length; i++) {
  console.log(
    `${variants[i].name.padEnd(24)}  ${median(rates[i]).toFixed(0).padStart(14)}   ${median(ratios[i]).toFixed(2)}`,
  );
}
server.disconnect();
await agent.close();
process.exit(0);
