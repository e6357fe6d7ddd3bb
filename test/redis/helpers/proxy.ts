/**
 * A TCP proxy in front of Redis that can stall: while stalled it reads
 * nothing from its clients, so commands sit unanswered (a slow or hung
 * Redis, as the client sees it), and delivers them when resumed.
 */
import { type AddressInfo, connect, createServer, type Socket } from 'node:net';

export interface StallProxy {
  readonly url: string;
  /** Resolves once `n` client connections have been accepted in all. */
  connected(n: number): Promise<void>;
  stall(): void;
  resume(): void;
  close(): Promise<void>;
}

export async function stallProxy(targetPort: number): Promise<StallProxy> {
  const clients = new Set<Socket>();
  let stalled = false;
  let accepted = 0;
  const waiters: { n: number; resolve: () => void }[] = [];
  const server = createServer((socket) => {
    accepted++;
    for (const w of waiters.filter((w) => accepted >= w.n)) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve();
    }
    const upstream = connect(targetPort, '127.0.0.1');
    clients.add(socket);
    socket.pipe(upstream);
    upstream.pipe(socket);
    // After pipe(), which resumes its source: a connection made while stalled stays unread.
    if (stalled) socket.pause();
    const end = (): void => {
      clients.delete(socket);
      socket.destroy();
      upstream.destroy();
    };
    socket.on('error', end);
    socket.on('close', end);
    upstream.on('error', end);
    upstream.on('close', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `redis://127.0.0.1:${port}`,
    connected: (n) =>
      accepted >= n ? Promise.resolve() : new Promise((resolve) => waiters.push({ n, resolve })),
    stall() {
      stalled = true;
      for (const socket of clients) socket.pause();
    },
    resume() {
      stalled = false;
      for (const socket of clients) socket.resume();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of clients) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
