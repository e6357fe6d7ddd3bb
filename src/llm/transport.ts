/**
 * The transport under `llm()`: the caller's fetch, wrapped so that
 * - an event stream's first event is looked at before the executor sees the
 *   response (`firstEvent`, staunch/sse: an error first event is retried);
 * - a 429's error body is read (a bounded prefix, put back in front of the
 *   rest, so the SDK still reads it whole) and what it says is kept for the
 *   `classify` hook, keyed by the response's `Headers` object;
 * - an event stream that goes quiet for `idle` ms (no event: comments and
 *   pings do not count) fails its body with an `EventStreamError` (`idle`)
 *   and releases the connection.
 */
import type { FetchLike } from '../fetch.js';
import { type Clock, noop, startTimer } from '../internal/clock.js';
import { EventStreamError } from '../sse/errors.js';
import { firstEvent, rebuild } from '../sse/first-event.js';
import { EventStreamParser, type ServerSentEvent } from '../sse/parse.js';
import { isEventStream } from '../sse/read.js';
import { type ErrorKind, readErrorKind } from './kinds.js';

/** Bytes of a 429's body read to tell a spent quota from a rate limit. */
export const ERROR_PREFIX_BYTES = 8192;

export interface ProviderTransport {
  readonly fetch: FetchLike;
  /** What the 429 with these headers said in its body. */
  readonly kindOf: (headers: object) => ErrorKind | undefined;
}

const isPing = (event: ServerSentEvent): boolean => event.event === 'ping';

/** Wraps `transport` (see the module comment). `idle`: ms, Infinity for none. */
export function providerTransport(
  transport: FetchLike,
  idle: number,
  clock: Clock,
): ProviderTransport {
  const kinds = new WeakMap<object, ErrorKind>();
  const peeking = firstEvent(transport);
  const fetch: FetchLike = async (input, init) => {
    const response = await peeking(input, init);
    if (response.status === 429 && response.body !== null) {
      const { text, body } = await readPrefix(response.body, ERROR_PREFIX_BYTES);
      const out = rebuild(response, body, 429);
      kinds.set(out.headers, readErrorKind(text));
      return out;
    }
    if (
      response.status === 200 &&
      response.body !== null &&
      Number.isFinite(idle) &&
      isEventStream(response)
    ) {
      return rebuild(response, watchIdle(response.body, idle, clock), 200);
    }
    return response;
  };
  return { fetch, kindOf: (headers) => kinds.get(headers) };
}

/**
 * Reads up to `limit` bytes of `source`; gives them as text, and a body
 * that yields every byte of `source` (those read first, then the rest).
 */
async function readPrefix(
  source: ReadableStream<Uint8Array>,
  limit: number,
): Promise<{ text: string; body: ReadableStream<Uint8Array> }> {
  const reader = source.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  let done = false;
  let failure: { error: unknown } | undefined;
  while (size < limit) {
    try {
      const next = await reader.read();
      if (next.done) {
        done = true;
        break;
      }
      chunks.push(next.value);
      size += next.value.byteLength;
    } catch (error) {
      failure = { error };
      break;
    }
  }
  const decoder = new TextDecoder();
  let text = '';
  for (const chunk of chunks) text += decoder.decode(chunk, { stream: true });
  text += decoder.decode();
  const body = new ReadableStream<Uint8Array>(
    {
      start(controller) {
        for (const chunk of chunks) controller.enqueue(chunk);
        if (failure !== undefined) controller.error(failure.error);
        else if (done) controller.close();
      },
      async pull(controller) {
        const next = await reader.read();
        if (next.done) controller.close();
        else controller.enqueue(next.value);
      },
      cancel(reason) {
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
  return { text, body };
}

/**
 * `source`, failed with an `EventStreamError` (`idle`) when `idle` ms pass
 * without an event (pings and comments are not events), counted from the
 * first read after the last event: a reader slow to ask for the next bytes
 * is not an idle stream.
 */
function watchIdle(
  source: ReadableStream<Uint8Array>,
  idle: number,
  clock: Clock,
): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  let progressed = false;
  const parser = new EventStreamParser((event) => {
    if (isPing(event)) return;
    progressed = true;
    events++;
  });
  /** Clock time since which no event came while a read was pending; undefined: none pending. */
  let quietSince: number | undefined;
  let events = 0;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const since = quietSince ?? clock.now();
        quietSince = since;
        let cancelTimer = noop;
        const quiet = new Promise<'idle'>((resolve) => {
          cancelTimer = startTimer(clock, Math.max(0, since + idle - clock.now()), () =>
            resolve('idle'),
          );
        });
        try {
          const next = await Promise.race([reader.read(), quiet]);
          if (next === 'idle') {
            const error = new EventStreamError(
              `event stream idle: no event for ${idle} ms (llm idleTimeout)`,
              'idle',
              { events },
            );
            reader.cancel(error).catch(noop);
            controller.error(error);
            return;
          }
          if (next.done) {
            controller.close();
            return;
          }
          progressed = false;
          parser.push(next.value);
          if (progressed) quietSince = undefined;
          controller.enqueue(next.value);
        } finally {
          cancelTimer();
        }
      },
      cancel(reason) {
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
}
