/**
 * The keep-alive HTTP server of bench/undici-overhead.mjs, run in its own
 * process so that its CPU time is not charged to the client measured.
 *
 * Started with `child_process.fork('bench/undici-server.mjs', [maxSeconds, bodyBytes])`:
 * - listens on 127.0.0.1, port 0, keep-alive on, and answers every request
 *   with 200 and a fixed body of `bodyBytes` bytes;
 * - sends `{ type: 'listening', port }` to its parent;
 * - answers `{ type: 'stats' }` with `{ type: 'stats', requests, cpu }` (cpu in ms);
 * - exits when its parent disconnects, and after `maxSeconds` whatever happens.
 */
import { createServer } from 'node:http';

const maxSeconds = Number(process.argv[2] ?? 120);
const bodyBytes = Number(process.argv[3] ?? 64);

if (typeof process.send !== 'function') {
  console.error('bench/undici-server.mjs must be started with child_process.fork.');
  process.exit(2);
}

setTimeout(() => {
  console.error(`bench/undici-server.mjs: time limit of ${maxSeconds} s reached, exiting`);
  process.exit(3);
}, Math.max(1, maxSeconds) * 1000).unref();
process.on('disconnect', () => process.exit(0));

const body = Buffer.alloc(bodyBytes, 'x');
const headers = { 'content-type': 'text/plain', 'content-length': String(body.byteLength) };
let requests = 0;

// A hint longer than any client idle time: connections stay open for the whole run.
const server = createServer({ keepAlive: true, keepAliveTimeout: 65_000 }, (req, res) => {
  requests++;
  req.resume();
  res.writeHead(200, headers);
  res.end(body);
});
server.keepAliveTimeout = 65_000;
server.headersTimeout = 70_000;

process.on('message', (message) => {
  if (message?.type === 'stats') {
    const { user, system } = process.cpuUsage();
    process.send({ type: 'stats', requests, cpu: (user + system) / 1000 });
  }
});

server.listen(0, '127.0.0.1', () => {
  process.send({ type: 'listening', port: server.address().port });
});
