import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { type AddressInfo, createServer as createNetServer, type Socket } from 'node:net';

/** What the server received, request by request. */
export interface Received {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: Buffer;
}

export interface TestServer {
  url: string;
  port: number;
  /** Requests whose body was fully received, in arrival order. */
  received: Received[];
  /** TCP connections accepted. */
  connections: number;
  /** Resolves when the server has received `n` requests (headers). */
  seen(n: number): Promise<void>;
  close(): Promise<void>;
}

type Handler = (req: IncomingMessage, res: ServerResponse, index: number, body: Buffer) => void;

/** A real node:http server on 127.0.0.1, port 0, that records everything it received. */
export async function httpServer(handler: Handler): Promise<TestServer> {
  const received: Received[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  let headersSeen = 0;
  let index = 0;
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    const n = index++;
    headersSeen++;
    for (const w of waiters.filter((w) => headersSeen >= w.n)) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve();
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      received.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body });
      handler(req, res, n, body);
    });
    req.on('error', () => {});
  });
  const state = { connections: 0 };
  server.on('connection', (socket: Socket) => {
    state.connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    received,
    get connections() {
      return state.connections;
    },
    seen: (n) =>
      headersSeen >= n ? Promise.resolve() : new Promise((resolve) => waiters.push({ n, resolve })),
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** An {@link httpServer} that answers each request with the next status of `statuses` (then the last). */
export function statusServer(statuses: readonly number[]): Promise<TestServer> {
  return httpServer((_req, res, index) => {
    res.statusCode = statuses[Math.min(index, statuses.length - 1)]!;
    res.end('body');
  });
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

/** Wraps a fetch to count the attempts in flight (for `FakeClock.autoAdvance`). */
export function trackedFetch(fetchImpl: typeof fetch = fetch): {
  fetch: (input: string, init: RequestInit) => Promise<Response>;
  idle: () => boolean;
  calls: RequestInit[];
} {
  let inFlight = 0;
  const calls: RequestInit[] = [];
  return {
    calls,
    idle: () => inFlight === 0,
    fetch: (input, init) => {
      inFlight++;
      calls.push(init);
      return fetchImpl(input, init).finally(() => {
        inFlight--;
      });
    },
  };
}
