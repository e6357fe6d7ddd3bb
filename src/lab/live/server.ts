/**
 * The live upstream: a `node:http` server on 127.0.0.1 run in a child
 * process by `--mode live`, answering as the server model decides, in real
 * time. The parent drives it over IPC (one phase per strategy) and it stops
 * by itself: when told to, when the parent goes away, after its lifetime
 * (argv[2], ms) or after its request limit (argv[3]).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { seededRandom } from '../random.js';
import { responseHeaders, ServerModel, type ServerOptions } from '../server-model.js';
import { type FromServer, LAB_ID_HEADER, type ToServer } from './protocol.js';

const lifetime = Number(process.argv[2] ?? 600_000);
const maxRequests = Number(process.argv[3] ?? 1_000_000);
const send = (message: FromServer): void => {
  process.send?.(message);
};

let model: ServerModel | undefined;
let options: ServerOptions | undefined;
let t0 = 0;
let total = 0;
let overflow = 0;
let arrivals: number[] = [];
let statuses: number[] = [];
let attempts: number[] = [];
let seen = new Map<string, number>();

const sockets = new Set<Socket>();
const now = (): number => performance.timeOrigin + performance.now() - t0;

function answer(res: ServerResponse, status: number, headers: Record<string, string>): void {
  if (res.destroyed) return;
  res.writeHead(status, { 'content-type': 'text/plain', ...headers });
  res.end(status === 200 ? 'ok' : 'no');
}

const server = createServer((req: IncomingMessage, res: ServerResponse) => {
  req.resume();
  if (model === undefined || options === undefined) return answer(res, 503, {});
  if (++total > maxRequests) {
    overflow++;
    return answer(res, 503, {});
  }
  const t = now();
  const verdict = model.arrive(t);
  const id = String(req.headers[LAB_ID_HEADER] ?? '');
  const attempt = (seen.get(id) ?? 0) + 1;
  seen.set(id, attempt);
  arrivals.push(t);
  statuses.push(verdict.status);
  attempts.push(attempt);
  const headers = responseHeaders(options.retryAfter, verdict);
  if (verdict.delay <= 0) answer(res, verdict.status, headers);
  else setTimeout(() => answer(res, verdict.status, headers), verdict.delay);
});
server.keepAliveTimeout = 10_000;
server.on('connection', (socket: Socket) => {
  sockets.add(socket);
  socket.on('close', () => sockets.delete(socket));
});

function stop(code: number): void {
  for (const s of sockets) s.destroy();
  server.close();
  process.exit(code);
}

process.on('message', (message: ToServer) => {
  if (message.type === 'phase') {
    options = message.server;
    model = new ServerModel(message.server, seededRandom(message.seed, 'server'));
    t0 = message.t0;
    arrivals = [];
    statuses = [];
    attempts = [];
    seen = new Map();
    send({ type: 'ready' });
  } else if (message.type === 'stats') {
    send({ type: 'stats', arrivals, statuses, attempts, overflow });
  } else if (message.type === 'stop') {
    stop(0);
  }
});
process.on('disconnect', () => stop(0));
setTimeout(() => {
  process.stderr.write(`staunch lab: live server stopped after its ${lifetime} ms lifetime\n`);
  stop(3);
}, lifetime).unref();
// The lifetime timer is unref'd: the IPC channel and the server keep the process alive.

server.listen(0, '127.0.0.1', () => {
  send({ type: 'listening', port: (server.address() as AddressInfo).port });
});
