/**
 * The error of `staunch/sse`: an event stream that failed in a way the caller
 * must handle itself (it was not, or can no longer be, retried).
 */
import { StaunchError, type StaunchErrorCode, type StaunchErrorOptions } from '../errors.js';

/**
 * Why an event stream failed:
 * - `interrupted`: the connection dropped (reset, truncated) while events were read;
 * - `status`: the server answered with a status other than 200 (`status` says which);
 * - `content-type`: the response was not `text/event-stream`;
 * - `idle`: no event arrived within the idle timeout (`staunch/llm`'s
 *   `idleTimeout`; comments and pings are not events that count).
 */
export type EventStreamFailure = 'interrupted' | 'status' | 'content-type' | 'idle';

/** Where the stream stood when it failed. */
export interface EventStreamErrorOptions extends StaunchErrorOptions {
  /** Events handed to the caller before the failure. */
  events?: number;
  /** The stream's last event ID at the failure (`''` if none). */
  lastEventId?: string;
  /** The response status, for `status`. */
  status?: number;
}

/**
 * An event stream failed after it was handed to the caller, or could not be
 * (re)opened. `cause` is the transport's error for `interrupted`.
 *
 * @example
 * try { for await (const e of readEvents(res)) render(e) }
 * catch (err) { if (err instanceof EventStreamError) showRetryButton(err.lastEventId) }
 */
export class EventStreamError extends StaunchError {
  static override readonly code: StaunchErrorCode = 'STAUNCH_EVENT_STREAM';
  readonly reason: EventStreamFailure;
  /** Events handed to the caller before the failure. */
  readonly events: number;
  /** The stream's last event ID at the failure (`''` if none). */
  readonly lastEventId: string;
  readonly status: number | undefined;

  constructor(message: string, reason: EventStreamFailure, options: EventStreamErrorOptions = {}) {
    const { events = 0, lastEventId = '', status, ...rest } = options;
    super(message, rest);
    this.reason = reason;
    this.events = events;
    this.lastEventId = lastEventId;
    this.status = status;
  }
}

Object.defineProperty(EventStreamError.prototype, 'name', {
  value: 'EventStreamError',
  writable: true,
  configurable: true,
});

/** An abort (the caller's signal, a timeout) passes through as it is: it is not a drop. */
export function isAbort(error: unknown, signal?: AbortSignal | null): boolean {
  if (signal?.aborted === true) return true;
  if (typeof error !== 'object' || error === null) return false;
  const name = (error as { name?: unknown }).name;
  return name === 'AbortError' || name === 'TimeoutError';
}
