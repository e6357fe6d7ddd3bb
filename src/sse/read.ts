/**
 * `readEvents`: the events of a `Response`, a byte `ReadableStream` or an
 * async iterable of bytes, as an async iterator.
 *
 * Not an async generator, on purpose: a generator's `return()` waits until
 * its pending `next()` settles, so a consumer that stops (a relay whose
 * client left) would keep the upstream connection open until the upstream's
 * next byte. Here `return()` cancels the stream at once, pending read or not.
 */
import { EventStreamError, isAbort } from './errors.js';
import { EventStreamParser, type ServerSentEvent } from './parse.js';

/** What `readEvents` reads: a fetch `Response`, a byte stream, or any async iterable of bytes. */
export type EventStreamSource = Response | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>;

/** Options of `readEvents`. */
export interface ReadEventsOptions {
  /**
   * The signal the response was fetched with: when it has aborted, a read
   * error is rethrown as is (the caller's own abort) instead of wrapped.
   * @default undefined
   */
  signal?: AbortSignal | undefined;
  /**
   * The last event ID to start from: events carry it until an `id:` field
   * changes it (a resumed stream continues the ID of the one before).
   * @default ''
   */
  lastEventId?: string | undefined;
}

/** The iterator `readEvents` returns; it also tells where the stream stands. */
export interface EventReader extends AsyncIterableIterator<ServerSentEvent> {
  /** The stream's last event ID so far (`''` if none): send it as `Last-Event-ID` to resume. */
  readonly lastEventId: string;
  /** The reconnection time in ms the stream asked for with `retry:`, if any. */
  readonly retry: number | undefined;
  /** Events handed out so far. */
  readonly events: number;
  /**
   * True once the stream has ended inside an event (a partial line, or fields
   * with no closing blank line): the standard discards that event, and a
   * clean end of the connection cut it short.
   */
  readonly truncated: boolean;
  /** Stops reading and cancels the source at once, even while a read is pending. */
  return(): Promise<IteratorResult<ServerSentEvent>>;
}

interface ByteSource {
  read(): Promise<{ done?: boolean | undefined; value?: unknown }>;
  cancel(): void;
}

const DONE: IteratorResult<ServerSentEvent> = Object.freeze({ done: true, value: undefined });

function byteSource(source: EventStreamSource): ByteSource | undefined {
  let stream: unknown = source;
  if (isResponse(source)) {
    if (source.body === null) return undefined;
    stream = source.body;
  }
  if (typeof (stream as ReadableStream).getReader === 'function') {
    const reader = (stream as ReadableStream<Uint8Array>).getReader();
    return {
      read: () => reader.read(),
      cancel: () => {
        reader.cancel().catch(ignore);
      },
    };
  }
  if (typeof (stream as AsyncIterable<Uint8Array>)[Symbol.asyncIterator] === 'function') {
    const it = (stream as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
    return {
      read: () => it.next(),
      cancel: () => {
        // An async generator's return() waits for its pending next(): not awaited.
        it.return?.()?.then(ignore, ignore);
      },
    };
  }
  throw new TypeError(
    `readEvents: source must be a Response, a ReadableStream or an AsyncIterable of Uint8Array, got ${typeof source}`,
  );
}

function isResponse(value: unknown): value is Response {
  return (
    typeof value === 'object' &&
    value !== null &&
    'body' in value &&
    typeof (value as Response).status === 'number' &&
    typeof (value as Response).headers === 'object'
  );
}

function ignore(): void {}

/** True when the response's media type is `text/event-stream` (parameters ignored). */
export function isEventStream(response: Response): boolean {
  const type = response.headers.get('content-type') ?? '';
  return type.split(';', 1)[0]!.trim().toLowerCase() === 'text/event-stream';
}

class Reader implements EventReader {
  readonly #parser: EventStreamParser;
  readonly #source: ByteSource | undefined;
  readonly #signal: AbortSignal | undefined;
  #queue: ServerSentEvent[] = [];
  #head = 0;
  #done = false;
  #filling: Promise<void> | undefined;
  #events = 0;
  #truncated = false;

  constructor(source: EventStreamSource, options: ReadEventsOptions) {
    this.#parser = new EventStreamParser((event) => this.#queue.push(event), options.lastEventId);
    this.#source = byteSource(source);
    this.#signal = options.signal;
    if (this.#source === undefined) this.#done = true;
  }

  get lastEventId(): string {
    return this.#parser.lastEventId;
  }

  get retry(): number | undefined {
    return this.#parser.retry;
  }

  get events(): number {
    return this.#events;
  }

  get truncated(): boolean {
    return this.#truncated;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<ServerSentEvent>> {
    if (this.#head < this.#queue.length) {
      const value = this.#queue[this.#head++]!;
      if (this.#head === this.#queue.length) {
        this.#queue = [];
        this.#head = 0;
      }
      this.#events++;
      return Promise.resolve({ done: false, value });
    }
    if (this.#done) return Promise.resolve(DONE);
    this.#filling ??= this.#fill().finally(() => {
      this.#filling = undefined;
    });
    return this.#filling.then(() => this.next());
  }

  /** Stops reading: cancels the source at once, even while a read is pending. */
  return(): Promise<IteratorResult<ServerSentEvent>> {
    this.#stop();
    return Promise.resolve(DONE);
  }

  throw(error?: unknown): Promise<IteratorResult<ServerSentEvent>> {
    this.#stop();
    return Promise.reject(error);
  }

  #stop(): void {
    this.#queue = [];
    this.#head = 0;
    if (this.#done) return;
    this.#done = true;
    this.#source?.cancel();
  }

  /** Reads chunks until at least one event is queued or the stream ends. */
  async #fill(): Promise<void> {
    const source = this.#source!;
    while (!this.#done && this.#head >= this.#queue.length) {
      let chunk: { done?: boolean | undefined; value?: unknown };
      try {
        chunk = await source.read();
      } catch (error) {
        if (this.#done) return; // stopped by return() meanwhile
        this.#done = true;
        if (isAbort(error, this.#signal)) throw error;
        if (error instanceof EventStreamError) throw error;
        throw new EventStreamError(
          `event stream interrupted after ${this.#events} events${describe(error)}`,
          'interrupted',
          { cause: error, events: this.#events, lastEventId: this.#parser.lastEventId },
        );
      }
      if (this.#done) return;
      if (chunk.done) {
        this.#done = true;
        this.#truncated = this.#parser.end();
        return;
      }
      const value = chunk.value;
      if (!(value instanceof Uint8Array)) {
        this.#stop();
        throw new TypeError(`readEvents: a chunk must be a Uint8Array, got ${typeof value}`);
      }
      this.#parser.push(value);
    }
  }
}

function describe(error: unknown): string {
  const code = (error as { cause?: { code?: unknown }; code?: unknown } | null)?.cause?.code;
  return typeof code === 'string' ? ` (${code})` : '';
}

/**
 * The Server-Sent Events of `source`, parsed as the HTML standard says, for
 * any split of the bytes. Stopping early (`break`, `return()`) cancels the
 * source, which for a fetch `Response` closes the upstream connection. A
 * connection that drops mid-stream throws an `EventStreamError`
 * (`reason: 'interrupted'`, `cause` the transport's error); an abort of the
 * caller's signal is rethrown as it is.
 *
 * @example
 * const res = await fetch('https://api.example.com/stream');
 * for await (const { event, data } of readEvents(res)) {
 *   if (event === 'done') break;
 *   console.log(data);
 * }
 * @see https://html.spec.whatwg.org/multipage/server-sent-events.html#parsing-an-event-stream
 */
export function readEvents(
  source: EventStreamSource,
  options: ReadEventsOptions = {},
): EventReader {
  return new Reader(source, options);
}
