/**
 * The event-stream parser of the HTML standard (§9.2.6 "Interpreting an event
 * stream"), incremental: bytes arrive in chunks split anywhere, even inside a
 * CRLF or a multi-byte UTF-8 character, and the events come out the same.
 *
 * Speed: each decoded chunk is scanned once. Line ends and colons are found
 * with `indexOf` from cached positions (never rescanned), a line that is
 * complete inside its chunk is never copied (fields are sliced straight out of
 * the chunk), and only a line cut by a chunk boundary is assembled from pieces.
 *
 * @see https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation
 */

/** One Server-Sent Event, as the HTML standard dispatches it. */
export interface ServerSentEvent {
  /** The event type: the last `event:` field, `'message'` when absent or empty. */
  event: string;
  /** The event's `data:` lines, joined with LF (no trailing LF). */
  data: string;
  /**
   * The stream's last event ID when the event was dispatched. As in the
   * standard (`MessageEvent.lastEventId`) it persists across events until an
   * `id:` field changes it; `''` when none was ever set.
   */
  id: string;
  /** The reconnection time in ms most recently set by a `retry:` field of the stream, if any. */
  retry: number | undefined;
}

const LF = 10;
const BOM = 0xfeff;
const COLON = 58;
const SPACE = 32;
const DIGITS = /^\d+$/;

/**
 * An incremental parser: `push` bytes as they arrive, `end` at the end of the
 * stream. Each complete event is passed to `onEvent` synchronously.
 *
 * @example
 * const parser = new EventStreamParser((e) => console.log(e.event, e.data));
 * parser.push(new TextEncoder().encode('data: hi\n\n')); // logs: message hi
 */
export class EventStreamParser {
  /** The stream's last event ID string (set when an event block is dispatched). */
  lastEventId = '';
  /** The reconnection time in ms the stream last asked for with `retry:`, if any. */
  retry: number | undefined = undefined;

  readonly #onEvent: (event: ServerSentEvent) => void;
  // UTF-8 decode of the standard: bad bytes become U+FFFD, and `stream: true` keeps a
  // character split across chunks for the next one. The leading BOM is dropped here
  // (`#started`), not by the decoder: Node 24 and 26's, given the first BOM in two
  // pieces, dropped a second one after it too.
  readonly #decoder = new TextDecoder('utf-8', { ignoreBOM: true });
  /** Some text has been decoded: a BOM from here on is text. */
  #started = false;
  /** Pieces of a line cut by a chunk boundary. */
  #carry: string[] = [];
  /** The previous text ended with CR: an LF at the start of the next one belongs to it. */
  #skipLF = false;
  #data: string | undefined = undefined;
  #type = '';
  #idBuffer = '';
  /** A field was seen since the last blank line. */
  #fields = false;

  /** `lastEventId`: the ID a resumed stream starts from (it persists until an `id:` field). */
  constructor(onEvent: (event: ServerSentEvent) => void, lastEventId = '') {
    this.#onEvent = onEvent;
    this.lastEventId = lastEventId;
    this.#idBuffer = lastEventId;
  }

  /** Parses the next bytes of the stream. */
  push(bytes: Uint8Array): void {
    this.#text(this.#decoder.decode(bytes, { stream: true }));
  }

  /**
   * Ends the stream. Per the standard, an event not yet ended by a blank line
   * is discarded, not dispatched. Returns true if one was (the stream ended
   * inside an event).
   */
  end(): boolean {
    this.#text(this.#decoder.decode());
    const mid = this.midEvent;
    this.#carry = [];
    this.#data = undefined;
    this.#type = '';
    this.#fields = false;
    return mid;
  }

  /** True when the bytes so far end inside an event (a partial line, or fields not yet dispatched). */
  get midEvent(): boolean {
    return this.#carry.length > 0 || this.#fields;
  }

  #text(text: string): void {
    const n = text.length;
    if (n === 0) return;
    let pos = 0;
    if (!this.#started) {
      this.#started = true;
      if (text.charCodeAt(0) === BOM) pos = 1;
    }
    if (this.#skipLF) {
      this.#skipLF = false;
      if (text.charCodeAt(0) === LF) pos = 1;
    }
    let lf = text.indexOf('\n', pos);
    let cr = text.indexOf('\r', pos);
    let colon = text.indexOf(':', pos);
    while (lf !== -1 || cr !== -1) {
      let end: number;
      let next: number;
      if (cr === -1 || (lf !== -1 && lf < cr)) {
        end = lf;
        next = lf + 1;
      } else {
        end = cr;
        next = cr + 1;
        if (next === n) this.#skipLF = true;
        else if (text.charCodeAt(next) === LF) next++;
      }
      if (lf !== -1 && lf < next) lf = text.indexOf('\n', next);
      if (cr !== -1 && cr < next) cr = text.indexOf('\r', next);
      if (this.#carry.length > 0) {
        this.#carry.push(text.slice(pos, end));
        const line = this.#carry.join('');
        this.#carry = [];
        this.#line(line, 0, line.length, line.indexOf(':'));
      } else {
        if (colon !== -1 && colon < pos) colon = text.indexOf(':', pos);
        this.#line(text, pos, end, colon !== -1 && colon < end ? colon : -1);
      }
      pos = next;
    }
    if (pos < n) this.#carry.push(pos === 0 ? text : text.slice(pos));
  }

  /** One line: `s[start, end)`, its first colon at `colon` (-1 if none). */
  #line(s: string, start: number, end: number, colon: number): void {
    if (start === end) {
      this.#dispatch();
      return;
    }
    if (s.charCodeAt(start) === COLON) return; // a comment
    this.#fields = true;
    const fieldEnd = colon === -1 ? end : colon;
    let valueStart = colon === -1 ? end : colon + 1;
    if (valueStart < end && s.charCodeAt(valueStart) === SPACE) valueStart++;
    switch (fieldEnd - start) {
      case 4:
        if (s.startsWith('data', start)) {
          const value = s.slice(valueStart, end);
          this.#data = this.#data === undefined ? value : `${this.#data}\n${value}`;
        }
        return;
      case 5:
        if (s.startsWith('event', start)) this.#type = s.slice(valueStart, end);
        else if (s.startsWith('retry', start)) {
          const value = s.slice(valueStart, end);
          if (DIGITS.test(value)) this.retry = Number(value);
        }
        return;
      case 2:
        if (s.startsWith('id', start)) {
          const value = s.slice(valueStart, end);
          if (!value.includes('\0')) this.#idBuffer = value;
        }
        return;
      default:
        return; // an unknown field is ignored
    }
  }

  #dispatch(): void {
    this.#fields = false;
    this.lastEventId = this.#idBuffer;
    const data = this.#data;
    const type = this.#type;
    this.#data = undefined;
    this.#type = '';
    if (data === undefined) return;
    this.#onEvent({
      event: type === '' ? 'message' : type,
      data,
      id: this.lastEventId,
      retry: this.retry,
    });
  }
}
