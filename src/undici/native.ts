/**
 * The handler API undici's `Agent` speaks natively, and the link that lets
 * an attempt (attempt.ts) speak it. undici 7's dispatchers run every request on
 * the legacy API (`onConnect`, `onHeaders`, `onData`, `onComplete`,
 * `onError`): a handler on the current API is converted on its way in
 * (`UnwrapHandler`, with an `UnwrapController` and a `parseHeaders` of the
 * headers and of the trailers for each request). undici 8 runs the current
 * API (which one runs: `LEGACY_NATIVE`, legacy.ts). An attempt is
 * dispatched on the native one: itself on undici 8, a
 * {@link LegacyLink} in front of it on undici 7, which is both undici's
 * legacy handler and the attempt's controller (one object where undici's
 * conversion makes two) and keeps the response headers raw.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';
import * as undici from 'undici';
import type { LegacyHandler } from './legacy.js';

type Controller = Dispatcher.DispatchController;

export const NO_HEADERS: IncomingHttpHeaders = Object.freeze({});

/** What a {@link LegacyLink} calls of its attempt (attempt.ts): undici's current API, raw headers. */
interface LinkedAttempt {
  onRequestStart(controller: Controller, context: unknown): void;
  onResponseStart(c: Controller, status: number, _: undefined, text?: string, raw?: Buffer[]): void;
  onResponseData(controller: Controller, chunk: Buffer): void;
  onResponseEnd(controller: Controller, trailers: IncomingHttpHeaders): void;
  onResponseError(controller: Controller | undefined, error: Error): void;
}

/** The link of the module's comment: what undici 7 calls, and the attempt's controller. */
export class LegacyLink implements LegacyHandler, Controller {
  readonly #attempt: LinkedAttempt;
  #abort: ((reason?: Error) => void) | undefined;
  #resume: (() => void) | undefined;
  // The controller's state, plain fields: only the attempt holds this link.
  paused = false;
  aborted = false;
  reason: Error | null = null;
  rawTrailers: Buffer[] | null = null;

  constructor(attempt: LinkedAttempt) {
    this.#attempt = attempt;
  }

  // The controller.

  abort(reason: Error): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.#abort?.(reason);
  }

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    this.#resume?.();
  }

  // The legacy handler.

  onConnect(abort: (reason?: Error) => void, context?: unknown): void {
    this.#abort = abort;
    this.#attempt.onRequestStart(this, context);
  }

  onHeaders(
    statusCode: number,
    rawHeaders: Buffer[],
    resume: () => void,
    statusText?: string,
  ): boolean {
    this.#resume = resume;
    // Not parsed here: the attempt parses them if someone reads them whole.
    this.#attempt.onResponseStart(this, statusCode, undefined, statusText, rawHeaders);
    return !this.paused;
  }

  onData(chunk: Buffer): boolean {
    this.#attempt.onResponseData(this, chunk);
    return !this.paused;
  }

  onComplete(rawTrailers: Buffer[] | null): void {
    this.rawTrailers = rawTrailers;
    // Trailers are rare: parsed only when there are some.
    const trailers =
      rawTrailers === null || rawTrailers.length === 0
        ? NO_HEADERS
        : (undici.util.parseHeaders(rawTrailers) as IncomingHttpHeaders);
    this.#attempt.onResponseEnd(this, trailers);
  }

  onError(error: Error): void {
    this.#attempt.onResponseError(this, error);
  }
}
