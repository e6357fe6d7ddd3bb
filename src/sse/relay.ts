/**
 * `toEventStream`: events → a `text/event-stream` byte stream, for any
 * framework that answers with a web `Response` (Hono, Next.js, Deno, Bun,
 * workers). Pull-based: the next event is asked for only when the consumer
 * wants bytes, so a slow client slows the upstream read instead of filling
 * memory. When the consumer cancels (the client left) or `signal` aborts, the
 * source's iterator is returned at once (`readEvents` then cancels the
 * upstream response, which closes its connection).
 */
import { describe } from '../internal/validate.js';
import { type EventInput, type EventMessage, EventWriter } from './format.js';

/** Options of `toEventStream`. */
export interface ToEventStreamOptions {
  /** Ends the stream (closed cleanly) and returns the source when it aborts. @default undefined */
  signal?: AbortSignal | undefined;
  /**
   * What to send when the source throws (an upstream that dropped), before
   * the stream is closed; without it, the stream is errored (the client sees
   * a cut connection, and an EventSource reconnects).
   * @default undefined
   */
  onError?: ((error: unknown) => EventMessage | undefined) | undefined;
}

/** The headers an event stream response should carry. */
export const EVENT_STREAM_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  // nginx buffers proxied responses unless told not to.
  'x-accel-buffering': 'no',
});

const encoder = new TextEncoder();

/** The iterator of an async or sync iterable, or a TypeError naming `name`. */
export function iterate<T>(
  source: AsyncIterable<T> | Iterable<T>,
  name: string,
): AsyncIterator<T> | Iterator<T> {
  const s = source as { [Symbol.asyncIterator]?: unknown; [Symbol.iterator]?: unknown } | null;
  if (typeof s?.[Symbol.asyncIterator] === 'function') {
    return (source as AsyncIterable<T>)[Symbol.asyncIterator]();
  }
  if (typeof s?.[Symbol.iterator] === 'function' && typeof source !== 'string') {
    return (source as Iterable<T>)[Symbol.iterator]();
  }
  throw new TypeError(`${name} must be an iterable of events, got ${describe(source)}`);
}

/** Calls `return()` without waiting: a generator's return waits for its pending next(). */
export function stopIterator(it: AsyncIterator<unknown> | Iterator<unknown>): void {
  try {
    const r = it.return?.();
    if (r !== undefined && typeof (r as Promise<unknown>).then === 'function') {
      (r as Promise<unknown>).then(undefined, () => {});
    }
  } catch {
    // A throwing return() has nothing left to release.
  }
}

/**
 * A `text/event-stream` byte stream of `events` (strings, `EventMessage`s,
 * or the `ServerSentEvent`s of `readEvents`, relayed as they came).
 *
 * @example
 * // Hono: relay an upstream stream; the client leaving aborts the upstream.
 * app.get('/events', async (c) => {
 *   const upstream = await fetch(UPSTREAM, { signal: c.req.raw.signal });
 *   return new Response(toEventStream(readEvents(upstream)), { headers: EVENT_STREAM_HEADERS });
 * });
 */
export function toEventStream(
  events: AsyncIterable<EventInput> | Iterable<EventInput>,
  options: ToEventStreamOptions = {},
): ReadableStream<Uint8Array> {
  const it = iterate(events, 'toEventStream: events');
  const { signal, onError } = options;
  const writer = new EventWriter();
  let done = false;
  let unlink = (): void => {};
  const stop = (): void => {
    if (done) return;
    done = true;
    unlink();
    stopIterator(it);
  };
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        if (signal === undefined) return;
        const onAbort = (): void => {
          if (done) return;
          stop();
          controller.close();
        };
        if (signal.aborted) onAbort();
        else {
          signal.addEventListener('abort', onAbort, { once: true });
          unlink = () => signal.removeEventListener('abort', onAbort);
        }
      },
      async pull(controller) {
        if (done) return;
        let text: string;
        try {
          const r = await it.next();
          if (done) return;
          if (r.done) {
            done = true;
            unlink();
            controller.close();
            return;
          }
          text = writer.format(r.value);
        } catch (error) {
          if (done) return;
          const last = onError?.(error);
          stop();
          if (last === undefined) controller.error(error);
          else {
            controller.enqueue(encoder.encode(writer.format(last)));
            controller.close();
          }
          return;
        }
        if (text !== '') controller.enqueue(encoder.encode(text));
      },
      cancel() {
        stop();
      },
    },
    { highWaterMark: 0 },
  );
}
