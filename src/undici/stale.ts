/**
 * The stale keep-alive race: a server closes an idle keep-alive connection
 * just as the client writes the next request on it. The request fails before
 * a single byte of a response arrives, though the server may never have seen
 * it. This module recognises that failure and marks the error with
 * `STALE_CONNECTION` (src/retry/classify.ts), so that the executor sends a
 * replayable request again at once instead of after a backoff (a
 * non-replayable one still fails, with `maybeSent: true`).
 *
 * Which socket carried an attempt is learnt from undici's
 * `undici:client:sendHeaders` channel, published synchronously right after
 * the handler's `onRequestStart` (both in client-h1 and client-h2): the
 * attempt registers itself in `onRequestStart`, the next publication says on
 * which socket it went and how many bytes that socket had read by then.
 *
 * A close that has already reached this machine is avoided rather than
 * recognised: a request that may not be sent twice (a `POST` without a key)
 * is dispatched only after the event loop has polled for I/O once more
 * ({@link afterNextPoll}), so undici reads the server's FIN first, retires
 * the connection and writes the request on a fresh one.
 */
import { subscribe } from 'node:diagnostics_channel';
import { errorCode, STALE_CONNECTION } from '../retry/classify.js';

/** Where one attempt went out. */
export interface Probe {
  /** The socket the request was written to, once known. */
  socket: { readonly bytesRead: number; readonly encrypted?: boolean } | undefined;
  /** Whether that socket had carried an earlier request. */
  reused: boolean;
  /** `socket.bytesRead` when the request was written. */
  bytesRead: number;
}

/**
 * Sockets that have carried a request (weakly held). Not a property of the
 * socket's own: adding one gives every used socket another hidden class, and
 * Node's and undici's code that reads sockets then sees two (counted on
 * Node 22: about 5,000 instructions a request more, bench/instructions.mjs).
 */
const used = new WeakSet<object>();
let pending: Probe | undefined;
let watching = false;

function onSendHeaders(message: unknown): void {
  const socket = (message as { socket?: unknown } | null)?.socket;
  const probe = pending;
  pending = undefined;
  if (typeof socket !== 'object' || socket === null) return;
  const reused = used.has(socket);
  if (!reused) used.add(socket);
  if (probe !== undefined) {
    probe.socket = socket as Probe['socket'];
    probe.reused = reused;
    probe.bytesRead = (socket as { bytesRead?: number }).bytesRead ?? 0;
  }
}

/** Starts following which socket each request goes out on (once per process). */
export function watchSockets(): void {
  if (watching) return;
  watching = true;
  subscribe('undici:client:sendHeaders', onSendHeaders);
}

/** A fresh probe. */
export function probe(): Probe {
  return { socket: undefined, reused: false, bytesRead: 0 };
}

/** Called from `onRequestStart`: the next `sendHeaders` publication is this attempt's. */
export function expectSend(p: Probe): void {
  pending = p;
}

/**
 * Runs `send` after the event loop's next poll phase. A request dispatched
 * from an I/O callback (the usual case: the previous response just ended)
 * would otherwise be written in the same loop turn, before a FIN that
 * arrived during that turn is read: the request goes out on a connection
 * the server has already closed, the server never reads it, and the client
 * cannot tell that from a server that read it and died (docs/undici.md).
 * undici's own check of an idle socket before reuse (7.28 and later)
 * yields with one `setImmediate`, which from the poll phase runs before the
 * next poll; two immediates always straddle one, with any undici 7 or 8.
 */
export function afterNextPoll(send: () => void): void {
  setImmediate(() => setImmediate(send));
}

/** Errors of a connection that went away under a request. */
const CLOSED_CODES: ReadonlySet<string> = new Set(['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE']);

/**
 * Marks `error` as the stale keep-alive race when the attempt failed before
 * its response started, on a reused socket, with no byte read since the
 * request was written, because the connection closed. (On TLS the socket
 * counts record bytes, and a server's close_notify alert is some: there,
 * "before the response started" is the test.)
 */
export function markIfStale(error: unknown, p: Probe): void {
  const socket = p.socket;
  if (!p.reused || socket === undefined) return;
  if (socket.encrypted !== true && socket.bytesRead !== p.bytesRead) return;
  if (typeof error !== 'object' || error === null) return;
  const code = errorCode(error);
  if (code === undefined || !CLOSED_CODES.has(code)) return;
  try {
    Object.defineProperty(error, STALE_CONNECTION, { value: true, configurable: true });
  } catch {
    // A frozen error stays unmarked: it is retried after a backoff, as any reset.
  }
}
