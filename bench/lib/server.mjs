/**
 * A keep-alive loopback HTTP server for the benchmarks, meant to run in its own
 * process so that its CPU time is not charged to the client being measured.
 *
 * Started with `child_process.fork('bench/lib/server.mjs', [maxSeconds, bodyBytes])`:
 * - listens on 127.0.0.1, port 0, keep-alive on, and answers every request
 *   with 200 and a fixed body of `bodyBytes` bytes (default 64);
 * - sends `{ type: 'listening', port }` to its parent over IPC;
 * - answers `{ type: 'stats' }` with `{ type: 'stats', requests, connections, cpu }`
 *   (cpu: ms of CPU time used so far);
 * - exits by itself when the parent disconnects or exits, and after
 *   `maxSeconds` (default 120) whatever happens.
 */
import { createServer } from 'node:http';

const maxSeconds = Number(process.argv[2] ?? 120);
const bodyBytes = Number(process.argv[3] ?? 64);

if (typeof process.send !== 'function') {
  console.error(
    'bench/lib/server.mjs must be started with child_process.fork (it reports over IPC).',
  );
  process.exit(2);
}

// Hard limit: a forgotten server must not outlive the benchmark for long.
const hardLimit = setTimeout(() => {
  console.error(`bench/lib/server.mjs: hard time limit of ${maxSeconds} s reached, exiting`);
  process.exit(3);
}, Math.max(1, maxSeconds) * 1000);
hardLimit.unref();

// The parent is gone (normal end, crash or kill): nothing left to serve.
process.on('disconnect', () => process.exit(0));

const body = Buffer.alloc(bodyBytes, 'x');
const headers = {
  'content-type': 'text/plain',
  'content-length': String(body.byteLength),
};
let requests = 0;
let connections = 0;

const server = createServer({ keepAlive: true, keepAliveTimeout: 65_000 }, (req, res) => {
  requests++;
  // Consume the request (none of the benchmark requests has a body) before answering.
  req.resume();
  res.writeHead(200, headers);
  res.end(body);
});
server.on('connection', () => {
  connections++;
});
server.keepAliveTimeout = 65_000;
server.headersTimeout = 70_000;

process.on('message', (message) => {
  if (message?.type === 'stats') {
    const { user, system } = process.cpuUsage();
    process.send({ type: 'stats', requests, connections, cpu: (user + system) / 1000 });
  }
});

server.listen(0, '127.0.0.1', () => {
  process.send({ type: 'listening', port: server.address().port });
});
