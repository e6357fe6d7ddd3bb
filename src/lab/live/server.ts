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
import { type SharedJob, SharedService } from '../sharing.js';
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
let sharing: SharedService | undefined;
/** Work of the requests served without sharing, ms (sharing counts its own). */
let work = 0;

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
  const demand = verdict.work ?? 0;
  const reply = (): void => answer(res, verdict.status, headers);
  if (demand === 0 || sharing === undefined) {
    work += demand;
    const start = t + verdict.delay - demand;
    // The client went before its answer: the server sees the socket close and stops the work.
    res.on('close', () => {
      if (!res.writableFinished) work -= Math.min(demand, Math.max(0, start + demand - now()));
    });
    if (verdict.delay <= 0) reply();
    else setTimeout(reply, verdict.delay);
    return;
  }
  const service = sharing;
  let job: SharedJob | undefined;
  let left = false;
  res.on('close', () => {
    left = true;
    if (job !== undefined) service.leave(job, now());
  });
  const enter = (): void => {
    if (!left) job = service.enter(now(), demand, reply);
  };
  if (verdict.delay <= 0) enter();
  else setTimeout(enter, verdict.delay);
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
    work = 0;
    const cores = message.server.cores ?? 0;
    sharing =
      cores > 0
        ? new SharedService(cores, (at, fn) => setTimeout(fn, Math.max(0, at - now())))
        : undefined;
    send({ type: 'ready' });
  } else if (message.type === 'stats') {
    send({
      type: 'stats',
      arrivals,
      statuses,
      attempts,
      overflow,
      work: work + (sharing?.work ?? 0),
    });
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
