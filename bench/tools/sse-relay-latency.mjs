#!/usr/bin/env node
/**
 * How long after the downstream client disconnects the upstream sees its
 * request's socket close, through the relays of staunch/sse. Three processes'
 * worth of roles in one (upstream node:http server, relay, client), all on
 * 127.0.0.1: the upstream sends one event and stays silent (the worst case:
 * nothing from upstream wakes the relay), the client reads that event, then
 * destroys its socket; the time is from that destroy to the upstream socket's
 * `close`, per trial.
 *
 * Relays: `pipeEvents` alone (the iterator's return cancels the upstream
 * body), `pipeEvents` + `disconnectSignal` on the upstream fetch, and the
 * Hono example (`toEventStream` under @hono/node-server).
 *
 *   npm run build && node bench/tools/sse-relay-latency.mjs [--trials 200]
 */
import { existsSync } from 'node:fs';
import { createServer, request } from 'node:http';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    trials: { type: 'string', default: '200' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (values.help) {
  console.log('Usage: npm run build && node bench/tools/sse-relay-latency.mjs [--trials N]');
  process.exit(0);
}
const trials = Number(values.trials);
if (!Number.isInteger(trials) || trials < 1) {
  console.error('sse-relay-latency: --trials must be an integer >= 1');
  process.exit(2);
}
const dist = fileURLToPath(new URL('../../dist/sse/index.js', import.meta.url));
if (!existsSync(dist)) {
  console.error('sse-relay-latency: run `npm run build` first (dist/sse/index.js is missing)');
  process.exit(2);
}
const { disconnectSignal, pipeEvents, readEvents } = await import(dist);
const hono = await import('../../examples/sse-relay/hono.mjs');

const listen = (server) =>
  new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${server.address().port}`)),
  );

// The upstream: one event, then silence; reports each request's socket close.
let onUpstreamClose = () => {};
const upstream = createServer((req, res) => {
  req.socket.once('close', () => onUpstreamClose(performance.now()));
  req.resume();
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.write('data: first\n\n');
});
const upstreamUrl = await listen(upstream);

function nodeRelay(withSignal) {
  return createServer(async (_req, res) => {
    const signal = withSignal ? disconnectSignal(res) : undefined;
    try {
      const up = await fetch(upstreamUrl, { method: 'POST', body: '{}', signal });
      await pipeEvents(readEvents(up, { signal }), res);
    } catch {
      res.destroy();
    }
  });
}

const relays = [
  ['pipeEvents', await listen(nodeRelay(false)), () => {}],
  ['pipeEvents + disconnectSignal', await listen(nodeRelay(true)), () => {}],
];
const honoServer = await hono.listen(hono.createApp({ upstream: upstreamUrl, fetch }));
relays.push(['Hono example (toEventStream)', honoServer.url, honoServer.close]);

/** One trial: ms from the client's destroy to the upstream socket's close. */
function trial(url) {
  return new Promise((resolve, reject) => {
    let destroyedAt = 0;
    const timeout = setTimeout(() => reject(new Error('upstream never closed (10 s)')), 10_000);
    onUpstreamClose = (at) => {
      clearTimeout(timeout);
      resolve(at - destroyedAt);
    };
    const path = url.includes(honoServer.url) ? `${url}/chat` : url;
    const req = request(path, { method: 'POST', agent: false }, (res) => {
      res.once('data', () => {
        destroyedAt = performance.now();
        req.destroy();
      });
    });
    req.on('error', () => {});
    req.end('{}');
  });
}

const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];

console.log(`node ${process.version}, ${trials} trials per relay (+5 warm-up)`);
console.log(
  `load average before: ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}`,
);
console.log('| relay | p50 ms | p99 ms | max ms | over 100 ms |');
console.log('| --- | --- | --- | --- | --- |');
for (const [name, url] of relays) {
  for (let i = 0; i < 5; i++) await trial(url);
  const times = [];
  for (let i = 0; i < trials; i++) times.push(await trial(url));
  times.sort((a, b) => a - b);
  const over = times.filter((t) => t > 100).length;
  console.log(
    `| ${name} | ${pct(times, 0.5).toFixed(2)} | ${pct(times, 0.99).toFixed(2)} | ${times.at(-1).toFixed(2)} | ${over} |`,
  );
}
console.log(
  `load average after: ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}`,
);
upstream.closeAllConnections();
upstream.close();
for (const [, , close] of relays) await close();
process.exit(0);
