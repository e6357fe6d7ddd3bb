/**
 * `resumableEvents`: the events of a GET event stream that survives drops, as
 * `EventSource` does: after a drop it reconnects with `Last-Event-ID` after
 * the server's `retry:` interval, within the caller's signal and a bounded
 * number of reconnections in a row.
 *
 * GET only. A POST stream (an LLM completion) cannot be resumed: sending the
 * request again is not a resumption but a new request, and the generation
 * (and its bill) would run again. HTML §9.2.3 has EventSource send GET only
 * for the same reason.
 */
import type { FetchLike } from '../fetch.js';
import { type Clock, systemClock } from '../internal/clock.js';
import { checkNumber, checkObject, describe } from '../internal/validate.js';
import { classifyError } from '../retry/classify.js';
import { EventStreamError, isAbort } from './errors.js';
import type { ServerSentEvent } from './parse.js';
import { type EventReader, isEventStream, readEvents } from './read.js';

/** Passed to `onReconnect` before each wait. */
export interface ReconnectInfo {
  /** 1 for the first reconnection in a row without a new event, then 2… */
  attempt: number;
  /** The wait before it, in ms. */
  delay: number;
  /** Sent as `Last-Event-ID` (`''`: not sent). */
  lastEventId: string;
  /** What ended the previous connection. */
  error: unknown;
}

/** Options of `resumableEvents`. Durations are in ms. */
export interface ResumableEventsOptions {
  /**
   * Reconnections in a row that deliver no new event before giving up with an
   * `EventStreamError`. A connection that delivers an event resets the count.
   * @default 3
   */
  reconnects?: number;
  /** The reconnection time until the server sets one with `retry:`. @default 3000 */
  retry?: number;
  /**
   * Each further reconnection in a row waits twice as long as the one before,
   * up to this.
   * @default 60_000
   */
  maxDelay?: number;
  /**
   * Reconnect also when the server ends the stream cleanly, as EventSource
   * does (the server then stops it with 204). By default a clean end at an
   * event boundary is the end; a stream cut inside an event is a drop.
   * @default false
   */
  reconnectOnEnd?: boolean;
  /** Called before each reconnection wait. */
  onReconnect?: (info: ReconnectInfo) => void;
  /** @default systemClock */
  clock?: Clock;
}

/** The iterator `resumableEvents` returns. */
export interface ResumableReader extends AsyncIterableIterator<ServerSentEvent> {
  /** The last event ID so far, carried across connections. */
  readonly lastEventId: string;
  /** Events handed out so far, all connections together. */
  readonly events: number;
  /** Connections opened so far. */
  readonly connections: number;
  /** Stops: cancels the stream, the pending fetch or the wait, at once. */
  return(): Promise<IteratorResult<ServerSentEvent>>;
}

const KEYS = ['reconnects', 'retry', 'maxDelay', 'reconnectOnEnd', 'onReconnect', 'clock'];
const DONE: IteratorResult<ServerSentEvent> = Object.freeze({ done: true, value: undefined });
const encoder = new TextEncoder();

/** HTML §9.2.4: the ID is sent UTF-8 encoded; a header value is a string of bytes. */
function byteString(value: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: ASCII is the fast path
  if (/^[\x00-\x7f]*$/.test(value)) return value;
  let out = '';
  for (const b of encoder.encode(value)) out += String.fromCharCode(b);
  return out;
}

class Resumable implements ResumableReader {
  readonly #fetch: FetchLike;
  readonly #url: string;
  readonly #init: RequestInit;
  readonly #reconnects: number;
  readonly #maxDelay: number;
  readonly #reconnectOnEnd: boolean;
  readonly #onReconnect: ((info: ReconnectInfo) => void) | undefined;
  readonly #clock: Clock;
  readonly #caller: AbortSignal | undefined;
  readonly #stop = new AbortController();
  #unlink: () => void = () => {};
  #retry: number;
  #reader: EventReader | undefined;
  #lastEventId = '';
  #events = 0;
  #connections = 0;
  #failures = 0;
  #done = false;
  /** Stopped by return(), not by a failure or the caller's abort. */
  #returned = false;

  constructor(fetch: FetchLike, url: string, init: RequestInit, o: ResumableEventsOptions) {
    this.#fetch = fetch;
    this.#url = url;
    this.#init = init;
    this.#reconnects = o.reconnects ?? 3;
    this.#retry = o.retry ?? 3000;
    this.#maxDelay = o.maxDelay ?? 60_000;
    this.#reconnectOnEnd = o.reconnectOnEnd ?? false;
    this.#onReconnect = o.onReconnect;
    this.#clock = o.clock ?? systemClock;
    const caller = init.signal ?? undefined;
    this.#caller = caller;
    if (caller !== undefined) {
      const abort = (): void => this.#stop.abort(caller.reason);
      if (caller.aborted) abort();
      else {
        caller.addEventListener('abort', abort, { once: true });
        this.#unlink = () => caller.removeEventListener('abort', abort);
      }
    }
  }

  get lastEventId(): string {
    return this.#reader?.lastEventId ?? this.#lastEventId;
  }

  get events(): number {
    return this.#events;
  }

  get connections(): number {
    return this.#connections;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<ServerSentEvent>> {
    // A next() pending when return() is called ends as done, not with the stop's abort.
    return this.#next().catch((error: unknown) => {
      if (this.#returned) return DONE;
      throw error;
    });
  }

  async #next(): Promise<IteratorResult<ServerSentEvent>> {
    let error: unknown;
    while (!this.#done) {
      if (this.#reader === undefined) {
        if (this.#connections > 0) await this.#wait(error);
        error = undefined;
        const opened = await this.#open().catch((e: unknown) => {
          // The caller's abort, a refusal (status, content type) or an error the same
          // request meets again (an invalid URL) ends it; other failures reconnect.
          if (this.#done || this.#stop.signal.aborted || isFinal(e)) throw this.#finish(e);
          return e;
        });
        if (opened !== true) {
          error = opened;
          continue;
        }
        if (this.#done) break; // 204: the server wants no more
      }
      const reader = this.#reader!;
      try {
        const result = await reader.next();
        if (!result.done) {
          this.#failures = 0;
          this.#events++;
          return result;
        }
      } catch (e) {
        this.#keep(reader);
        if (this.#done || isAbort(e, this.#stop.signal) || !(e instanceof EventStreamError)) {
          throw this.#finish(e);
        }
        error = e;
        continue;
      }
      this.#keep(reader);
      if (this.#done) break;
      if (!reader.truncated && !this.#reconnectOnEnd) break;
      const how = reader.truncated ? 'ended inside an event' : 'ended';
      error = new EventStreamError(`event stream ${how}`, 'interrupted', {
        events: this.#events,
        lastEventId: this.#lastEventId,
      });
    }
    this.#finish();
    return DONE;
  }

  return(): Promise<IteratorResult<ServerSentEvent>> {
    if (!this.#done) this.#returned = true;
    this.#finish();
    return Promise.resolve(DONE);
  }

  /** Keeps what the closed connection taught (ID, retry) and forgets it. */
  #keep(reader: EventReader): void {
    this.#lastEventId = reader.lastEventId;
    if (reader.retry !== undefined) this.#retry = reader.retry;
    this.#reader = undefined;
  }

  /** Ends the iteration; returns `error` to throw (the caller's abort reason as it is). */
  #finish(error?: unknown): unknown {
    if (!this.#done) {
      this.#done = true;
      this.#unlink();
      this.#reader?.return().catch(() => {});
      this.#stop.abort(STOPPED);
    }
    if (this.#caller?.aborted) return this.#caller.reason;
    return error;
  }

  async #wait(error: unknown): Promise<void> {
    this.#failures++;
    if (this.#failures > this.#reconnects) {
      const times = this.#reconnects === 1 ? 'reconnection' : 'reconnections';
      throw this.#finish(
        new EventStreamError(
          `event stream dropped; gave up after ${this.#reconnects} ${times} without a new event`,
          'interrupted',
          { cause: error, events: this.#events, lastEventId: this.#lastEventId },
        ),
      );
    }
    const delay = Math.min(this.#maxDelay, this.#retry * 2 ** (this.#failures - 1));
    this.#onReconnect?.({
      attempt: this.#failures,
      delay,
      lastEventId: this.#lastEventId,
      error,
    });
    try {
      await this.#clock.sleep(delay, this.#stop.signal);
    } catch (e) {
      throw this.#finish(e);
    }
  }

  /** Opens a connection: true, or throws (EventStreamError for a refusal, else a transport error). */
  async #open(): Promise<true> {
    const headers = new Headers(this.#init.headers);
    if (!headers.has('accept')) headers.set('accept', 'text/event-stream');
    if (this.#lastEventId !== '') headers.set('last-event-id', byteString(this.#lastEventId));
    else headers.delete('last-event-id');
    this.#connections++;
    const response = await this.#fetch(this.#url, {
      ...this.#init,
      headers,
      signal: this.#stop.signal,
    });
    const status = response.status;
    // HTML §9.2.3: 204 means the server wants no more; any other non-200 fails for good.
    if (status === 204 || status !== 200 || !isEventStream(response)) {
      response.body?.cancel().catch(() => {});
      if (status === 204) {
        this.#finish();
        return true;
      }
      const at = { events: this.#events, lastEventId: this.#lastEventId, status };
      throw status !== 200
        ? new EventStreamError(`event stream answered ${status}`, 'status', at)
        : new EventStreamError(
            `event stream answered content-type ${describe(response.headers.get('content-type'))}`,
            'content-type',
            at,
          );
    }
    // The last event ID carries over to the new connection's events (HTML §9.2.6).
    this.#reader = readEvents(response, {
      signal: this.#stop.signal,
      lastEventId: this.#lastEventId,
    });
    return true;
  }
}

const STOPPED: unique symbol = Symbol('staunch.sse.stopped');

function isFinal(error: unknown): boolean {
  if (error instanceof EventStreamError) return error.reason !== 'interrupted';
  return classifyError(error) === 'fatal';
}

/**
 * Reads a GET event stream and resumes it after drops: a reset, or a stream
 * cut inside an event, reconnects after the reconnection time (the server's
 * `retry:`, doubling for each reconnection in a row that brings no new event)
 * with `Last-Event-ID` set to the last ID seen. Ends on a clean end of the
 * stream (or a 204); throws an `EventStreamError` for a status other than
 * 200, a wrong content type, or once `reconnects` reconnections in a row
 * brought nothing; rethrows the abort reason of `init.signal`, which bounds
 * everything, waits included.
 *
 * @throws TypeError for a method other than GET: a POST stream is not
 * replayable, and sending it again would run the generation again.
 * @example
 * for await (const e of resumableEvents(fetch, 'https://example.com/feed', {
 *   signal: AbortSignal.timeout(60_000),
 * })) console.log(e.id, e.data);
 */
export function resumableEvents(
  fetch: FetchLike,
  url: string | URL,
  init: RequestInit = {},
  options: ResumableEventsOptions = {},
): ResumableReader {
  if (typeof fetch !== 'function') {
    throw new TypeError(`resumableEvents: fetch must be a function, got ${describe(fetch)}`);
  }
  const method = (init.method ?? 'GET').toUpperCase();
  if (method !== 'GET') {
    throw new TypeError(
      `resumableEvents: init.method must be GET, got ${describe(init.method)}: a ${method} stream cannot be resumed (the request is not replayable; sending it again would run it, and any generation it started, again)`,
    );
  }
  if (init.body != null) {
    throw new TypeError('resumableEvents: init.body must be absent (a GET has no body)');
  }
  const o = checkObject('resumableEvents options', options, KEYS) as ResumableEventsOptions;
  if (o.reconnects !== undefined) {
    checkNumber('options.reconnects', o.reconnects, { min: 0, integer: true });
  }
  if (o.retry !== undefined) checkNumber('options.retry', o.retry, { min: 0 });
  if (o.maxDelay !== undefined) checkNumber('options.maxDelay', o.maxDelay, { min: 0 });
  if (o.onReconnect !== undefined && typeof o.onReconnect !== 'function') {
    throw new TypeError(`options.onReconnect must be a function, got ${describe(o.onReconnect)}`);
  }
  return new Resumable(fetch, typeof url === 'string' ? url : url.href, init, o);
}
