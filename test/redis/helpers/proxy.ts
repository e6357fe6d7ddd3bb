/**
 * A TCP proxy in front of Redis that can stall: while stalled it reads
 * nothing from its clients, so commands sit unanswered (a slow or hung
 * Redis, as the client sees it), and delivers them when resumed.
 */
import { type AddressInfo, connect, createServer, type Socket } from 'node:net';

export interface StallProxy {
  readonly url: string;
  stall(): void;
  resume(): void;
  close(): Promise<void>;
}

export async function stallProxy(targetPort: number): Promise<StallProxy> {
  const clients = new Set<Socket>();
  let stalled = false;
  const server = createServer((socket) => {
    const upstream = connect(targetPort, '127.0.0.1');
    clients.add(socket);
    if (stalled) socket.pause();
    socket.pipe(upstream);
    upstream.pipe(socket);
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
