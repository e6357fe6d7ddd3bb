/**
 * `firstEvent`: a transport wrapper for `createFetch`'s `fetch` option that
 * looks at an event stream's first event before the executor sees the
 * response, so that a stream that fails before it delivered anything is
 * retried like any failed attempt, and one that delivered an event is not.
 *
 * It speaks only the executor's existing language, so the executor needs no
 * hook: an error event becomes a synthetic status (529, 429, 500…, the bytes
 * of the error kept as the body), a drop before the first event a thrown
 * error (a maybe-sent failure). See docs/sse.md for the limits.
 */
import { StaunchError } from '../errors.js';
import type { FetchLike } from '../fetch.js';
import { describe } from '../internal/validate.js';
import { EventStreamError, isAbort } from './errors.js';
import { EventStreamParser, type ServerSentEvent } from './parse.js';
import { isEventStream } from './read.js';

/** Options of `firstEvent`. */
export interface FirstEventOptions {
  /**
   * Bytes read at most while looking for the first event; a stream still
   * without one past that is handed over as it is.
   * @default 65_536
   */
  maxBytes?: number;
  /**
   * Events that are not progress, skipped while looking for the first one
   * (they stay in the stream handed over).
   * @default (event) => event.event === 'ping'
   */
  skip?: (event: ServerSentEvent) => boolean;
  /**
   * The status a first event stands for when it is an error, `undefined`
   * when it is not. The default reads the Anthropic and OpenAI error shapes.
   * @default providerErrorStatus
   */
  errorStatus?: (event: ServerSentEvent) => number | undefined;
}

/** Marks a response made from an error event: `x-staunch-first-event: error`. */
export const FIRST_EVENT_HEADER = 'x-staunch-first-event';

// Anthropic error types and OpenAI error codes/types → the status the API answers them with.
const ERROR_STATUS: Readonly<Record<string, number>> = {
  overloaded_error: 529,
  rate_limit_error: 429,
  rate_limit_exceeded: 429,
  insufficient_quota: 429,
  api_error: 500,
  server_error: 500,
  timeout_error: 504,
  invalid_request_error: 400,
  authentication_error: 401,
  billing_error: 402,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
};

/** An error the provider says the request was not processed for: safe to send again for any method. */
const NOT_PROCESSED = new Set(['overloaded_error']);
/** Spent quota or billing: the same request fails again, whatever the status says. */
const NEVER_RETRY = new Set(['insufficient_quota', 'billing_error']);

function errorKinds(event: ServerSentEvent): string[] | undefined {
  const data = event.data;
  const isErrorEvent = event.event === 'error';
  if (!isErrorEvent && !data.startsWith('{')) return undefined;
  let body: unknown;
  try {
    body = JSON.parse(data);
  } catch {
    return isErrorEvent ? [] : undefined;
  }
  const error = (body as { error?: unknown } | null)?.error;
  const isError =
    isErrorEvent ||
    (body as { type?: unknown }).type === 'error' ||
    (typeof error === 'object' && error !== null);
  if (!isError) return undefined;
  const kinds: string[] = [];
  if (typeof error === 'object' && error !== null) {
    for (const k of [(error as { code?: unknown }).code, (error as { type?: unknown }).type]) {
      if (typeof k === 'string') kinds.push(k);
    }
  }
  return kinds;
}

/**
 * The default `errorStatus`: an `event: error`, or a JSON `data` with
 * `type: "error"` or an `error` object (Anthropic's and OpenAI's shapes), is
 * an error; its `error.code` or `error.type` gives the status the API uses
 * for it (`overloaded_error` 529, `rate_limit_error` 429, `api_error` 500…),
 * an unknown one 502.
 */
export function providerErrorStatus(event: ServerSentEvent): number | undefined {
  const kinds = errorKinds(event);
  if (kinds === undefined) return undefined;
  for (const k of kinds) if (ERROR_STATUS[k] !== undefined) return ERROR_STATUS[k];
  return 502;
}

const isPing = (event: ServerSentEvent): boolean => event.event === 'ping';

/**
 * Wraps a transport so that an event stream's first event is read before the
 * response is returned. On a `200 text/event-stream` response:
 * - the first event (after `skip`ped ones) is an error: the response becomes
 *   a synthetic one with the error's status (`errorStatus`) and the error's
 *   `data` as its body, headers kept, `x-staunch-first-event: error` added,
 *   and `x-should-retry: true` for an overload (the provider did not process
 *   the request) or `false` for a spent quota. The executor then retries it
 *   by its table, and returns it as the response if retries run out;
 * - the stream drops or ends before any event: an `EventStreamError`
 *   (`interrupted`) is thrown, a maybe-sent failure, retried for replayable
 *   requests only;
 * - otherwise the response is handed over with the bytes already read put
 *   back in front. A drop after that is an `EventStreamError` in the body,
 *   never retried.
 * Other responses pass through untouched.
 *
 * @example
 * const fetch = createFetch({ fetch: firstEvent(globalThis.fetch) });
 */
export function firstEvent(fetch: FetchLike, options: FirstEventOptions = {}): FetchLike {
  if (typeof fetch !== 'function') {
    throw new TypeError(`firstEvent: fetch must be a function, got ${describe(fetch)}`);
  }
  const { maxBytes = 65_536, skip = isPing, errorStatus = providerErrorStatus } = options;
  if (!Number.isInteger(maxBytes) || maxBytes < 1) {
    throw new RangeError(
      `firstEvent: maxBytes must be a positive integer, got ${describe(maxBytes)}`,
    );
  }
  for (const [name, f] of [
    ['skip', skip],
    ['errorStatus', errorStatus],
  ] as const) {
    if (typeof f !== 'function') {
      throw new TypeError(`firstEvent: ${name} must be a function, got ${describe(f)}`);
    }
  }
  return async (input, init) => {
    const response = await fetch(input, init);
    if (response.status !== 200 || response.body === null || !isEventStream(response)) {
      return response;
    }
    return peek(response, init.signal ?? undefined, maxBytes, skip, errorStatus);
  };
}

async function peek(
  response: Response,
  signal: AbortSignal | undefined,
  maxBytes: number,
  skip: (event: ServerSentEvent) => boolean,
  errorStatus: (event: ServerSentEvent) => number | undefined,
): Promise<Response> {
  const reader = response.body!.getReader();
  const peeked: Uint8Array[] = [];
  let first: ServerSentEvent | undefined;
  const parser = new EventStreamParser((event) => {
    if (first === undefined && !skip(event)) first = event;
  });
  let read = 0;
  while (first === undefined && read <= maxBytes) {
    let chunk: Awaited<ReturnType<typeof reader.read>>;
    try {
      chunk = await reader.read();
    } catch (error) {
      if (isAbort(error, signal) || error instanceof StaunchError) throw error;
      throw new EventStreamError('event stream dropped before its first event', 'interrupted', {
        cause: error,
      });
    }
    if (chunk.done) {
      throw new EventStreamError('event stream ended before its first event', 'interrupted');
    }
    peeked.push(chunk.value);
    read += chunk.value.byteLength;
    parser.push(chunk.value);
  }
  const status = first === undefined ? undefined : errorStatus(first);
  if (status === undefined) return rebuild(response, rejoin(peeked, reader, signal), 200);
  reader.cancel().catch(() => {});
  return errorResponse(response, first!, status);
}

function errorResponse(response: Response, event: ServerSentEvent, status: number): Response {
  const headers = strippedHeaders(response);
  let json: boolean;
  try {
    JSON.parse(event.data);
    json = true;
  } catch {
    json = false;
  }
  headers.set('content-type', json ? 'application/json' : 'text/plain; charset=utf-8');
  headers.set(FIRST_EVENT_HEADER, 'error');
  const kinds = errorKinds(event) ?? [];
  // The 200's own x-should-retry (if any) spoke of the stream, not of this error.
  headers.delete('x-should-retry');
  if (kinds.some((k) => NEVER_RETRY.has(k))) headers.set('x-should-retry', 'false');
  else if (kinds.some((k) => NOT_PROCESSED.has(k))) headers.set('x-should-retry', 'true');
  return rebuild(response, event.data, status, headers);
}

/** The response's headers less those that described the original encoded body. */
function strippedHeaders(response: Response): Headers {
  const headers = new Headers(response.headers);
  headers.delete('content-length');
  headers.delete('content-encoding');
  headers.delete('transfer-encoding');
  return headers;
}

/**
 * A new response with `body` and `status`, the original's headers (less
 * those of its encoded body), URL and redirect flag. Shared with staunch/llm.
 */
export function rebuild(
  response: Response,
  body: ReadableStream<Uint8Array> | string,
  status: number,
  headers: Headers = strippedHeaders(response),
): Response {
  const out = new Response(body, {
    status,
    statusText: status === response.status ? response.statusText : 'First event was an error',
    headers,
  });
  // A constructed Response has no URL; callers (SDKs) may read it.
  Object.defineProperty(out, 'url', { value: response.url });
  Object.defineProperty(out, 'redirected', { value: response.redirected });
  return out;
}

/** The peeked bytes, then the rest of the stream; a drop after the first event is an EventStreamError. */
function rejoin(
  peeked: readonly Uint8Array[],
  reader: ReadableStreamDefaultReader<Uint8Array>,
  signal: AbortSignal | undefined,
): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        for (const chunk of peeked) controller.enqueue(chunk);
      },
      async pull(controller) {
        try {
          const { done, value } = await reader.read();
          if (done) controller.close();
          else controller.enqueue(value);
        } catch (error) {
          controller.error(
            isAbort(error, signal) || error instanceof StaunchError
              ? error
              : new EventStreamError(
                  'event stream interrupted after its first event (not retried: events were delivered)',
                  'interrupted',
                  { cause: error },
                ),
          );
        }
      },
      cancel(reason) {
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
}
