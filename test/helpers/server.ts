import type { IncomingMessage, ServerResponse } from 'node:http';
import { type AddressInfo, createServer as createNetServer, type Socket } from 'node:net';
import { faultFetch } from '../../src/testing/index.js';
import {
  type FaultServer,
  type FaultServerOptions,
  faultServer,
} from '../../src/testing/server.js';

/** What the server received, request by request. */
export interface Received {
  method: string;
  path: string;
  headers: Readonly<Record<string, string>>;
  body: Buffer;
}

export interface TestServer {
  url: string;
  port: number;
  /** Requests whose body was fully received, in arrival order. */
  readonly received: Received[];
  /** TCP connections accepted. */
  connections: number;
  /** Resolves when the server has received `n` requests (headers). */
  seen(n: number): Promise<void>;
  close(): Promise<void>;
}

type Handler = (req: IncomingMessage, res: ServerResponse, index: number, body: Buffer) => void;

/** The suite's view of a staunch/testing server: `received` with Buffer bodies and paths. */
function view(server: FaultServer): TestServer {
  return {
    url: server.url,
    port: server.port,
    get received() {
      return server.seen.requests.map((r) => ({
        method: r.method,
        path: r.url.slice(server.url.length),
        headers: r.headers,
        body: Buffer.from(r.bytes),
      }));
    },
    get connections() {
      return server.connections;
    },
    seen: (n) => server.arrived(n),
    close: () => server.close(),
  };
}

/** A staunch/testing server that answers by `options`' script, seen through {@link TestServer}. */
export async function scriptServer(options: FaultServerOptions): Promise<TestServer> {
  return view(await faultServer(options));
}

/** A staunch/testing server whose every request goes to `handler` (with its arrival index and body). */
export function httpServer(handler: Handler): Promise<TestServer> {
  return scriptServer({
    handler: (req, res, request) => handler(req, res, request.index, Buffer.from(request.bytes)),
  });
}

/** A server that answers each request with the next status of `statuses` (then the last), body `body`. */
export function statusServer(statuses: readonly number[]): Promise<TestServer> {
  const steps = statuses.map((status) => ({ status, body: 'body' }));
  return scriptServer({ script: steps, after: steps.at(-1) ?? 'pass' });
}

export interface RawServer {
  url: string;
  port: number;
  /** Connections accepted. */
  connections: number;
  /** Bytes received on each connection, in order. */
  data: Buffer[];
  /** Connections closed so far (by either side). */
  closed: number;
  /** Resolves when `n` connections have been accepted. */
  accepted(n: number): Promise<void>;
  close(): Promise<void>;
}

/** A raw node:net server for faults: reset, stall, truncate, accept-then-close. */
export async function rawServer(
  onConnection: (socket: Socket, index: number) => void,
): Promise<RawServer> {
  const data: Buffer[] = [];
  const sockets = new Set<Socket>();
  const state = { connections: 0, closed: 0 };
  const waiters: { n: number; resolve: () => void }[] = [];
  const server = createNetServer((socket) => {
    const i = state.connections++;
    data[i] = Buffer.alloc(0);
    sockets.add(socket);
    socket.on('data', (chunk: Buffer) => {
      data[i] = Buffer.concat([data[i]!, chunk]);
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      state.closed++;
      sockets.delete(socket);
    });
    onConnection(socket, i);
    for (const w of waiters.filter((w) => state.connections >= w.n)) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    data,
    get connections() {
      return state.connections;
    },
    get closed() {
      return state.closed;
    },
    accepted: (n) =>
      state.connections >= n
        ? Promise.resolve()
        : new Promise((resolve) => waiters.push({ n, resolve })),
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A port on 127.0.0.1 with nothing listening: connecting to it is refused. */
export async function closedPort(): Promise<number> {
  const server = createNetServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Wraps a fetch to count the attempts in flight (for `FakeClock.autoAdvance`) and keep each init. */
export function trackedFetch(fetchImpl: typeof fetch = fetch): {
  fetch: (input: string, init: RequestInit) => Promise<Response>;
  idle: () => boolean;
  calls: RequestInit[];
} {
  const calls: RequestInit[] = [];
  const faulty = faultFetch({ fetch: fetchImpl });
  return {
    calls,
    idle: () => faulty.inFlight === 0,
    fetch: (input, init) => {
      calls.push(init);
      return faulty(input, init);
    },
  };
}
