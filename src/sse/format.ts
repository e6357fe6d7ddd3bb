/**
 * Writing events as `text/event-stream` (HTML §9.2.5): what a relay sends
 * downstream. Multi-line data becomes one `data:` line per line (a bare
 * `data: ${text}\n\n` with a newline inside would end the event early or
 * inject fields), and `id:` / `retry:` are written only when they change, so
 * that relaying parsed events (which carry the stream's persistent ID) does
 * not repeat them on every event.
 */
import { describe } from '../internal/validate.js';
import type { ServerSentEvent } from './parse.js';

/** An event to send. A plain string is sent as `data`. */
export interface EventMessage {
  /** The event type; `'message'` (the default type) is not written. */
  event?: string | undefined;
  /** The data; CR, LF and CRLF inside split it into several `data:` lines. */
  data?: string | undefined;
  /** The event ID; `''` resets the client's last event ID. */
  id?: string | undefined;
  /** The reconnection time the client should use, in ms. */
  retry?: number | undefined;
  /** A comment (ignored by clients; keeps proxies from timing out an idle stream). */
  comment?: string | undefined;
}

/** What the relays accept: messages, parsed events (from `readEvents`), or strings. */
export type EventInput = EventMessage | ServerSentEvent | string;

const NEWLINE = /\r\n|\r|\n/;
const BREAK = /[\r\n]/;

/** Formats events one after another; remembers the ID and retry last written. */
export class EventWriter {
  #id = '';
  #retry: number | undefined;
  readonly #always: boolean;

  /** `always`: write `id` and `retry` whenever given, not only when they change. */
  constructor(always = false) {
    this.#always = always;
  }

  /** The bytes (as text) of one event. Throws a TypeError for a field that cannot be written. */
  format(input: EventInput): string {
    if (typeof input === 'string') return this.#data(input);
    if (typeof input !== 'object' || input === null) {
      throw new TypeError(`an event must be an object or a string, got ${describe(input)}`);
    }
    const { event, data, id, retry, comment } = input as EventMessage;
    let out = '';
    if (comment !== undefined) {
      if (typeof comment !== 'string') throw field('comment', comment);
      for (const line of comment.split(NEWLINE)) out += `:${line}\n`;
    }
    if (event !== undefined && event !== 'message') {
      if (typeof event !== 'string' || BREAK.test(event)) throw field('event', event);
      out += `event: ${event}\n`;
    }
    if (id !== undefined && (this.#always || id !== this.#id)) {
      if (typeof id !== 'string' || BREAK.test(id) || id.includes('\0')) throw field('id', id);
      out += id === '' ? 'id\n' : `id: ${id}\n`;
      this.#id = id;
    }
    if (retry !== undefined && (this.#always || retry !== this.#retry)) {
      if (!Number.isInteger(retry) || retry < 0) throw field('retry', retry);
      out += `retry: ${retry}\n`;
      this.#retry = retry;
    }
    if (data !== undefined) {
      if (typeof data !== 'string') throw field('data', data);
      return out + this.#data(data);
    }
    return out === '' ? '' : `${out}\n`;
  }

  #data(data: string): string {
    if (!BREAK.test(data)) return `data: ${data}\n\n`;
    let out = '';
    for (const line of data.split(NEWLINE)) out += `data: ${line}\n`;
    return `${out}\n`;
  }
}

function field(name: string, value: unknown): TypeError {
  const rule =
    name === 'retry'
      ? 'a non-negative integer'
      : name === 'id'
        ? 'a string without CR, LF or NUL'
        : name === 'event'
          ? 'a string without CR or LF'
          : 'a string';
  return new TypeError(`event.${name} must be ${rule}, got ${describe(value)}`);
}

/**
 * One event as `text/event-stream` text (stateless: `id` and `retry` are
 * always written when given).
 * @example formatEvent({ event: 'delta', data: 'a\nb' }) // 'event: delta\ndata: a\ndata: b\n\n'
 */
export function formatEvent(input: EventInput): string {
  return new EventWriter(true).format(input);
}
