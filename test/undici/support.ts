/** Helpers of the staunch/undici tests: raw HTTP/1.1 peers, a certificate, channel logs, attempt tracking. */
import { execFileSync } from 'node:child_process';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { type AddressInfo, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Dispatcher } from 'undici';
import type { StaunchListeners } from '../../src/events.js';

/** One request as a raw peer parsed it. */
export interface RawRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
  /** Index of the connection it came on. */
  connection: number;
  /** Index of the request on that connection (0 for the first). */
  index: number;
}

export interface KeepAlivePeer {
  url: string;
  port: number;
  requests: RawRequest[];
  /** Connections accepted. */
  readonly connections: number;
  /**
   * Closes every connection that has no request in progress, now (close(2):
   * on loopback the FIN is in the client's receive queue when this returns).
   * Returns how many it closed.
   */
  closeIdle(): number;
  close(): Promise<void>;
}

export interface KeepAlivePeerOptions {
  /**
   * Drop a connection idle for this many ms (no `Keep-Alive` hint is sent).
   * A request that arrives on a connection idle that long crossed the
   * server's close: the connection is dropped without reading it (an RST, as
   * a server that closed sends). A timer closes idle connections at twice
   * this, at the latest. (Timer callbacks are late or early by a millisecond
   * or so; the arrival check is what makes the race happen as scheduled.)
   */
  idleMs?: number;
  /**
   * Called for each complete request; return `'drop'` to destroy the
   * connection instead of answering (the request was received), `'unread'`
   * to destroy it and not count the request, as a server that had closed
   * the connection before the request reached it (it never read it).
   */
  onRequest?: (request: RawRequest) => 'answer' | 'drop' | 'unread';
  /** Send `Keep-Alive: timeout=<hint>` (seconds) with each answer. */
  hint?: number;
}

/**
 * A raw HTTP/1.1 peer on node:net that keeps connections alive without
 * sending a `Keep-Alive` hint, answers `200 ok`, and (optionally) drops a
 * connection after `idleMs` without a request, as servers do.
 */
export async function keepAlivePeer(options: KeepAlivePeerOptions = {}): Promise<KeepAlivePeer> {
  const requests: RawRequest[] = [];
  const sockets = new Set<Socket>();
  const state = { connections: 0 };
  const idleSockets = new Set<Socket>();
  const hint = options.hint === undefined ? '' : `Keep-Alive: timeout=${options.hint}\r\n`;
  const answer = `HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n${hint}\r\nok`;
  const server = createServer((socket) => {
    const connection = state.connections++;
    sockets.add(socket);
    socket.on('close', () => {
      sockets.delete(socket);
      idleSockets.delete(socket);
    });
    socket.on('error', () => {});
    let buffer = Buffer.alloc(0);
    let index = 0;
    let idle: NodeJS.Timeout | undefined;
    // Idle since the last answer (a connection that answered nothing yet is not idle).
    let idleSince: number | undefined;
    const arm = (): void => {
      if (options.idleMs === undefined) return;
      clearTimeout(idle);
      idleSince = performance.now();
      idle = setTimeout(() => socket.destroy(), 2 * options.idleMs);
    };
    socket.on('close', () => clearTimeout(idle));
    socket.on('data', (chunk: Buffer) => {
      clearTimeout(idle);
      idleSockets.delete(socket);
      if (
        options.idleMs !== undefined &&
        idleSince !== undefined &&
        buffer.length === 0 &&
        performance.now() - idleSince >= options.idleMs
      ) {
        socket.destroy();
        return;
      }
      buffer = Buffer.concat([buffer, chunk]);
      for (;;) {
        const end = buffer.indexOf('\r\n\r\n');
        if (end === -1) return;
        const head = buffer.subarray(0, end).toString('latin1').split('\r\n');
        const [method = '', path = ''] = head[0]!.split(' ');
        const headers: Record<string, string> = {};
        for (const line of head.slice(1)) {
          const colon = line.indexOf(':');
          headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
        }
        const length = Number(headers['content-length'] ?? 0);
        if (buffer.length < end + 4 + length) return;
        const body = buffer.subarray(end + 4, end + 4 + length).toString();
        buffer = buffer.subarray(end + 4 + length);
        const request = { method, path, headers, body, connection, index: index++ };
        const verdict = options.onRequest?.(request) ?? 'answer';
        if (verdict !== 'unread') requests.push(request);
        if (verdict !== 'answer') {
          socket.destroy();
          return;
        }
        socket.write(answer);
        idleSockets.add(socket);
        arm();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    get connections() {
      return state.connections;
    },
    closeIdle: () => {
      const closing = [...idleSockets];
      for (const s of closing) s.destroy();
      return closing.length;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/**
 * A self-signed certificate for 127.0.0.1 and localhost, made now with the
 * `openssl` command (Node has no API that creates certificates).
 */
export function selfSignedCertificate(): { key: string; cert: string } {
  const dir = mkdtempSync(join(tmpdir(), 'staunch-cert-'));
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
        '-days',
        '1',
        '-subj',
        '/CN=localhost',
        '-addext',
        'subjectAltName=IP:127.0.0.1,DNS:localhost',
      ],
      { stdio: 'ignore', timeout: 10_000 },
    );
    return {
      key: readFileSync(join(dir, 'key.pem'), 'utf8'),
      cert: readFileSync(join(dir, 'cert.pem'), 'utf8'),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Records what is published on diagnostics channels until `stop()`. */
export function channelLog(names: readonly string[]): {
  messages: { channel: string; message: unknown }[];
  stop: () => void;
} {
  const messages: { channel: string; message: unknown }[] = [];
  const subscribers = names.map((name) => {
    const fn = (message: unknown): void => {
      messages.push({ channel: name, message });
    };
    subscribe(name, fn);
    return [name, fn] as const;
  });
  return {
    messages,
    stop: () => {
      for (const [name, fn] of subscribers) unsubscribe(name, fn);
    },
  };
}

/**
 * Listeners that count attempts in flight (for `FakeClock.autoAdvance`) and
 * record the retry and giveUp events.
 */
export function tracker(): {
  on: StaunchListeners;
  idle: () => boolean;
  retries: Parameters<NonNullable<StaunchListeners['retry']>>[0][];
  giveUps: Parameters<NonNullable<StaunchListeners['giveUp']>>[0][];
  waits: Parameters<NonNullable<StaunchListeners['wait']>>[0][];
} {
  let inFlight = 0;
  const retries: Parameters<NonNullable<StaunchListeners['retry']>>[0][] = [];
  const giveUps: Parameters<NonNullable<StaunchListeners['giveUp']>>[0][] = [];
  const waits: Parameters<NonNullable<StaunchListeners['wait']>>[0][] = [];
  return {
    idle: () => inFlight === 0,
    retries,
    giveUps,
    waits,
    on: {
      wait: (event) => {
        waits.push(event);
      },
      attemptStart: () => {
        inFlight++;
      },
      attempt: () => {
        inFlight--;
      },
      retry: (event) => {
        retries.push(event);
      },
      giveUp: (event) => {
        giveUps.push(event);
      },
    },
  };
}

/** Rejects with what `promise` rejected with, or throws if it resolved. */
export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

// Teardown lives in test/helpers, shared by every suite.
/** What a caller on undici's current handler API got: status, parsed headers, body, trailers. */
export interface CurrentApiResult {
  status: number;
  headers: Record<string, unknown>;
  body: string;
  trailers: unknown;
}

/** Dispatches a `GET` of `url` to `dispatcher` with a handler on undici's current API. */
export function dispatchCurrent(dispatcher: Dispatcher, url: string): Promise<CurrentApiResult> {
  const { origin, pathname } = new URL(url);
  return new Promise((resolve, reject) => {
    let status = 0;
    let headers: Record<string, unknown> = {};
    let body = '';
    dispatcher.dispatch(
      { origin, path: pathname, method: 'GET' },
      {
        onRequestStart() {},
        onResponseStart(_c, statusCode, h) {
          status = statusCode;
          headers = h as Record<string, unknown>;
        },
        onResponseData(_c, chunk) {
          body += chunk.toString();
        },
        onResponseEnd(_c, trailers) {
          resolve({ status, headers, body, trailers });
        },
        onResponseError(_c, error) {
          reject(error);
        },
      },
    );
  });
}

export { closeAfterEach } from '../helpers/teardown.js';
