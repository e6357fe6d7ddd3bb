import type { Socket } from 'node:net';
import { type RawServer, rawServer } from './server.js';

/**
 * A raw node:net server that hands each connection's request head (up to the
 * blank line) to `onHead`, which writes the response by hand: for bodies cut
 * at an exact byte (`socket.destroy()` mid-body).
 */
export function rawHttpServer(
  onHead: (socket: Socket, head: string, index: number) => void,
): Promise<RawServer> {
  return rawServer((socket, index) => {
    let head = '';
    socket.on('data', (chunk: Buffer) => {
      if (head.includes('\r\n\r\n')) return;
      head += chunk.toString('latin1');
      if (head.includes('\r\n\r\n')) onHead(socket, head, index);
    });
  });
}
