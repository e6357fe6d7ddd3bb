/**
 * The node:http relay: events → a `ServerResponse` (node:http, Express,
 * Fastify's `reply.raw`, Koa's `ctx.res`). It imports nothing from node: it
 * uses only the methods of the response it is given (`EventResponse` below
 * is the part of `ServerResponse` it needs), so `staunch/sse` stays free of
 * `node:` imports.
 *
 * The client leaving is seen by the response's `close` event: the source
 * iterator is returned at once (with `readEvents` that cancels the upstream
 * body, closing its connection), and `disconnectSignal` aborts whatever it
 * was passed to (the upstream fetch), even while the upstream is silent.
 */
import { type EventInput, type EventMessage, EventWriter } from './format.js';
import { EVENT_STREAM_HEADERS, iterate, stopIterator } from './relay.js';

/** The part of node's `ServerResponse` the relay uses. */
export interface EventResponse {
  readonly headersSent: boolean;
  readonly writableEnded: boolean;
  readonly writableFinished: boolean;
  writeHead(status: number, headers: Record<string, string>): unknown;
  flushHeaders?(): void;
  write(chunk: string): boolean;
  end(): unknown;
  destroy(error?: Error): unknown;
  once(event: 'close' | 'drain', listener: () => void): unknown;
  off(event: 'close' | 'drain', listener: () => void): unknown;
}

/** Options of `pipeEvents`. */
export interface PipeEventsOptions {
  /** Ends the response cleanly and returns the source when it aborts. @default undefined */
  signal?: AbortSignal | undefined;
  /** Extra response headers (over `EVENT_STREAM_HEADERS`), if headers were not sent yet. @default {} */
  headers?: Record<string, string> | undefined;
  /**
   * What to send when the source throws, before the response ends; without
   * it, the response is destroyed (the client sees a cut connection).
   * @default undefined
   */
  onError?: ((error: unknown) => EventMessage | undefined) | undefined;
}

/** How a relay ended. */
export interface PipeEventsResult {
  /** `end`: the source ended; `disconnect`: the client left; `abort`: `signal`; `error`: the source threw. */
  reason: 'end' | 'disconnect' | 'abort' | 'error';
  /** Events written. */
  events: number;
  /** The source's error, for `error`. */
  error?: unknown;
}

/**
 * An `AbortSignal` that aborts when the client disconnects before the
 * response finished. Pass it to the upstream fetch so that the upstream
 * request is aborted the moment the client leaves.
 *
 * @example
 * const signal = disconnectSignal(res);
 * const upstream = await fetch(UPSTREAM, { signal });
 * await pipeEvents(readEvents(upstream, { signal }), res);
 */
export function disconnectSignal(res: EventResponse): AbortSignal {
  const controller = new AbortController();
  const onClose = (): void => {
    if (!res.writableFinished) controller.abort(disconnected());
  };
  res.once('close', onClose);
  return controller.signal;
}

function disconnected(): Error {
  const error = new Error('the client disconnected');
  error.name = 'AbortError';
  return error;
}

/**
 * Writes `events` to `res` as `text/event-stream` (status 200 and
 * `EVENT_STREAM_HEADERS` unless headers were sent already), honouring
 * backpressure. Resolves once the relay is over, never rejects: the result
 * says why it ended (after the headers were sent, an error can only end the
 * response).
 *
 * @example
 * http.createServer(async (req, res) => {
 *   const signal = disconnectSignal(res);
 *   const upstream = await fetch(UPSTREAM, { signal });
 *   const { reason, events } = await pipeEvents(readEvents(upstream, { signal }), res);
 *   log.info({ reason, events });
 * });
 */
export async function pipeEvents(
  events: AsyncIterable<EventInput> | Iterable<EventInput>,
  res: EventResponse,
  options: PipeEventsOptions = {},
): Promise<PipeEventsResult> {
  const it = iterate(events, 'pipeEvents: events');
  const { signal, onError } = options;
  const writer = new EventWriter();
  let ended: PipeEventsResult['reason'] | undefined;
  let wake = (): void => {};
  // Settles when the relay is stopped, so that neither a silent source nor a full socket holds it.
  const stopped = new Promise<undefined>((resolve) => {
    wake = () => resolve(undefined);
  });
  const finish = (reason: PipeEventsResult['reason']): void => {
    if (ended !== undefined) return;
    ended = reason;
    stopIterator(it);
    wake();
  };
  const onClose = (): void => {
    if (!res.writableFinished) finish('disconnect');
  };
  const onAbort = (): void => finish('abort');
  res.once('close', onClose);
  if (signal?.aborted) onAbort();
  else signal?.addEventListener('abort', onAbort, { once: true });
  let count = 0;
  try {
    if (!res.headersSent && ended === undefined) {
      res.writeHead(200, { ...EVENT_STREAM_HEADERS, ...options.headers });
      res.flushHeaders?.();
    }
    while (ended === undefined) {
      const r = await Promise.race([it.next(), stopped]);
      if (ended !== undefined || r === undefined) break;
      if (r.done) {
        ended = 'end';
        break;
      }
      const text = writer.format(r.value);
      if (text === '') continue;
      count++;
      if (!res.write(text)) {
        let drained = (): void => {};
        await Promise.race([
          new Promise<void>((resolve) => {
            drained = resolve;
            res.once('drain', resolve);
          }),
          stopped,
        ]);
        res.off('drain', drained);
      }
    }
    if (ended !== 'disconnect' && !res.writableEnded) res.end();
    return { reason: ended ?? 'end', events: count };
  } catch (error) {
    if (ended !== undefined) return { reason: ended, events: count };
    finish('error');
    const last = onError?.(error);
    if (last !== undefined && !res.writableEnded) {
      res.write(writer.format(last));
      res.end();
    } else res.destroy(error instanceof Error ? error : undefined);
    return { reason: 'error', events: count, error };
  } finally {
    res.off('close', onClose);
    signal?.removeEventListener('abort', onAbort);
  }
}
