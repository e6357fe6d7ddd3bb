/**
 * `staunch/testing/server`: a real `node:http` server on 127.0.0.1, port 0,
 * that answers by the same script as `faultFetch`, for tests that want
 * sockets. A reset destroys the socket, a stall sends no byte, a drip writes
 * the body a chunk at a time, a truncated body stops short of its
 * `Content-Length`. It records every request it received.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { type Clock, systemClock } from '../internal/clock.js';
import { checkObject, describe } from '../internal/validate.js';
import { createScript, label, type Plan, SCRIPT_KEYS, type ScriptOptions } from './script.js';
import { Seen, type SeenRequest } from './seen.js';

/** Answers a `'pass'` step; `request` is what was recorded for it (its body included). */
export type PassHandler = (req: IncomingMessage, res: ServerResponse, request: SeenRequest) => void;

/** Options of {@link faultServer}. */
export interface FaultServerOptions extends ScriptOptions {
  /** Answers the `'pass'` steps. @default a `200` with an empty body */
  handler?: PassHandler;
  /** Times `delay` and `drip`. @default the system clock */
  clock?: Clock;
}

/** A running fault server. */
export interface FaultServer {
  /** `http://127.0.0.1:PORT` */
  readonly url: string;
  readonly port: number;
  /** Every request received (once its body was read; a `'refuse'` at its head), with its step. */
  readonly seen: Seen;
  /** TCP connections accepted. */
  readonly connections: number;
  /** Resolves once `n` request heads have arrived. */
  arrived(n: number): Promise<void>;
  /** Destroys every open socket (stalled ones included) and stops listening. */
  close(): Promise<void>;
}

type Respond = Extract<Plan, { kind: 'respond' }>;

/** Writes a response step: after `delay`, the head, then the body at once, dripping, or cut short. */
async function write(res: ServerResponse, plan: Respond, clock: Clock): Promise<void> {
  // A client that goes away ends the waits: no timer outlives its socket.
  const gone = new AbortController();
  res.on('close', () => gone.abort(new Error('client gone')));
  try {
    if (plan.delay > 0) await clock.sleep(plan.delay, gone.signal);
    res.writeHead(plan.status, [
      ...plan.headers.flat(),
      'content-length',
      String(plan.body.length),
    ]);
    const end = plan.truncate ?? plan.body.length;
    const step = plan.drip > 0 ? plan.chunk : end;
    for (let offset = 0; offset < end; offset += step) {
      if (offset > 0) await clock.sleep(plan.drip, gone.signal);
      res.write(plan.body.slice(offset, Math.min(end, offset + step)));
    }
    if (plan.truncate === undefined) res.end();
    // Cut once the bytes are written: the client reads them, then the connection ends short.
    else res.write('', () => res.socket?.destroy());
  } catch {
    // The client went away mid-wait: nothing left to send.
  }
}

/**
 * Starts a server on 127.0.0.1, port 0, that answers each request with the
 * next step of `script`, then `after` (or a seeded `chance`).
 * @example
 * const server = await faultServer({ script: ['reset', { status: 200, body: 'ok', truncate: 1 }] });
 * await fetch(server.url); // …
 * await server.close();
 */
export async function faultServer(options: FaultServerOptions = {}): Promise<FaultServer> {
  const o = checkObject('faultServer options', options, [...SCRIPT_KEYS, 'handler', 'clock']);
  if (o.handler !== undefined && typeof o.handler !== 'function') {
    throw new TypeError(
      `faultServer options.handler must be a function, got ${describe(o.handler)}`,
    );
  }
  if (o.clock !== undefined && typeof (o.clock as Clock | null)?.sleep !== 'function') {
    throw new TypeError(`faultServer options.clock must be a Clock, got ${describe(o.clock)}`);
  }
  const next = createScript(options);
  const clock = options.clock ?? systemClock;
  const seen = new Seen();
  const sockets = new Set<Socket>();
  const waiters: { n: number; resolve: () => void }[] = [];
  let heads = 0;
  let connections = 0;
  let origin = '';

  const server = createServer((req, res) => {
    const index = heads++;
    for (const w of waiters.filter((w) => heads >= w.n)) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve();
    }
    const plan = next();
    const record = (bytes: Uint8Array) => {
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(req.headers)) {
        if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
      }
      const url = `${origin}${req.url ?? ''}`;
      const method = req.method ?? '';
      return seen.record({ index, method, url, headers, bytes, fault: label(plan) });
    };
    req.on('error', () => {});
    if (plan.kind === 'refuse') {
      record(new Uint8Array(0));
      req.socket.destroy();
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const request = record(new Uint8Array(Buffer.concat(chunks)));
      if (plan.kind === 'reset') req.socket.destroy();
      else if (plan.kind === 'respond') void write(res, plan, clock);
      else if (plan.kind === 'pass') {
        if (options.handler) options.handler(req, res, request);
        else res.end();
      }
      // 'stall': no byte, until the client gives up or the server closes.
    });
  });
  server.on('connection', (socket: Socket) => {
    connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  origin = `http://127.0.0.1:${port}`;
  return {
    url: origin,
    port,
    seen,
    get connections() {
      return connections;
    },
    arrived: (n) =>
      heads >= n ? Promise.resolve() : new Promise((resolve) => waiters.push({ n, resolve })),
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
