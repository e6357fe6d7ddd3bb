/**
 * undici's legacy handler API (`onConnect`, `onHeaders`, `onData`,
 * `onComplete`, `onError`), both ways. Callers: what `undici.request`,
 * `stream`, `pipeline` and undici 7's `fetch` hand a dispatcher, adapted to
 * the current API staunch's handlers speak (`LegacyCaller`), with the raw
 * headers undici read handed on as a bare `Agent` does (undici's own
 * `WrapHandler` rebuilds them from the parsed object, lower-cased).
 * Dispatchers: undici 7's `Agent` runs every request on the legacy API and
 * converts a current-API handler on its way in (`UnwrapHandler`, a
 * controller and a `parseHeaders` of the headers and trailers each
 * request); an attempt goes in behind a `LegacyLink` instead, one object
 * that is both undici's handler and the attempt's controller and keeps the
 * headers raw. undici 8 runs the current API: an attempt goes in as it is.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';
import * as undici from 'undici';

/** undici's controller with the raw head undici 7's carry (undici 8's carry none). */
export type RawController = Dispatcher.DispatchController & {
  readonly rawHeaders?: Buffer[] | null | undefined;
  readonly rawTrailers?: Buffer[] | null | undefined;
};

/** The legacy handler API, as undici 7 still calls it. */
export interface LegacyHandler {
  onConnect?(abort: (reason?: Error) => void, context?: unknown): void;
  onResponseStarted?(): void;
  onHeaders?(
    statusCode: number,
    rawHeaders: Buffer[],
    resume: () => void,
    statusText?: string,
  ): boolean | undefined;
  onData?(chunk: Buffer): boolean | undefined;
  onComplete?(trailers: Buffer[] | null): void;
  onError?(error: Error): void;
}

/** Does this handler speak the current API? (undici's own test.) */
function isNewApi(handler: object): boolean {
  return typeof (handler as Dispatcher.DispatchHandler).onRequestStart === 'function';
}

/**
 * undici's own handler conversions, found once by a probe through a composed
 * `Agent` whose origin's dispatcher only records the handler it gets (no
 * connection is made). `WRAPPER`: the class undici 7's `compose` wraps a
 * legacy caller's handler in before an interceptor sees it (`WrapHandler`,
 * not exported); `undefined` where `compose` wraps nothing (undici 8).
 * `LEGACY_NATIVE`: the `Agent` converts a current-API handler to the legacy
 * API before its connections see it (undici 7).
 */
const [WRAPPER, legacyNative] = ((): [unknown, boolean] => {
  const caller: LegacyHandler = { onHeaders: () => true };
  const current: Dispatcher.DispatchHandler = { onRequestStart() {}, onResponseError() {} };
  let wrapped: Partial<Dispatcher.DispatchHandler & LegacyHandler> | undefined;
  let seen: LegacyHandler | undefined;
  class Recorder extends undici.Dispatcher {
    override dispatch(_opts: unknown, handler: unknown): boolean {
      seen = handler as LegacyHandler;
      return true;
    }
  }
  try {
    const agent = new undici.Agent({ factory: () => new Recorder() as never });
    const probe = agent.compose((dispatch) => (opts, handler) => {
      wrapped = handler as typeof wrapped;
      return dispatch(opts, current);
    });
    probe.dispatch({ origin: 'http://127.0.0.1', path: '/', method: 'GET' }, caller as never);
  } catch {
    return [undefined, false];
  }
  const native = seen !== current && typeof seen?.onHeaders === 'function' && !isNewApi(seen);
  const isWrapper =
    wrapped !== caller &&
    typeof wrapped?.onRequestStart === 'function' &&
    typeof wrapped.onHeaders === 'function' &&
    wrapped.constructor !== Object;
  return [isWrapper ? wrapped!.constructor : undefined, native];
})();

export const LEGACY_NATIVE: boolean = legacyNative;

function toRaw(headers: IncomingHttpHeaders): Buffer[] {
  const raw: Buffer[] = [];
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    raw.push(Buffer.from(name, 'latin1'));
    if (Array.isArray(value)) {
      raw.push(value.map((v) => Buffer.from(v, 'latin1')) as unknown as Buffer);
    } else raw.push(Buffer.from(String(value), 'latin1'));
  }
  return raw;
}

/**
 * The caller's handler on the current API: `handler` itself, or a legacy
 * handler adapted by {@link LegacyCaller}. undici 7's `compose` wrapper of a
 * legacy caller (what an interceptor gets from `undici.request`) counts as
 * legacy: its `onConnect`, `onHeaders`, `onData`, `onComplete` and `onError`
 * are the caller's own, called straight through, which spares undici's two
 * conversions (the headers parsed, rebuilt as Buffers, parsed again).
 */
export function currentApi(handler: object): Dispatcher.DispatchHandler {
  if ((WRAPPER !== undefined && handler.constructor === WRAPPER) || !isNewApi(handler)) {
    return new LegacyCaller(handler as LegacyHandler);
  }
  return handler as Dispatcher.DispatchHandler;
}

export class LegacyCaller implements Dispatcher.DispatchHandler {
  readonly #handler: LegacyHandler;

  constructor(handler: LegacyHandler) {
    this.#handler = handler;
  }

  onRequestStart(controller: RawController, context: unknown): void {
    this.#handler.onConnect?.((reason) => controller.abort(reason as Error), context);
  }

  onResponseStart(
    controller: RawController,
    statusCode: number,
    headers: IncomingHttpHeaders,
    statusMessage?: string,
  ): void {
    const h = this.#handler;
    h.onResponseStarted?.();
    const raw = controller.rawHeaders ?? toRaw(headers);
    if (h.onHeaders?.(statusCode, raw, () => controller.resume(), statusMessage) === false) {
      controller.pause();
    }
  }

  onResponseData(controller: RawController, chunk: Buffer): void {
    if (this.#handler.onData?.(chunk) === false) controller.pause();
  }

  onResponseEnd(controller: RawController, trailers: IncomingHttpHeaders): void {
    this.#handler.onComplete?.(controller.rawTrailers ?? toRaw(trailers));
  }

  onResponseError(_controller: RawController, error: Error): void {
    if (typeof this.#handler.onError !== 'function') throw error;
    this.#handler.onError(error);
  }
}

export const NO_HEADERS: IncomingHttpHeaders = Object.freeze({});

/** What undici 7 calls for an attempt, and that attempt's controller (the module's comment). */
export class LegacyLink implements LegacyHandler, Dispatcher.DispatchController {
  readonly #attempt: Dispatcher.DispatchHandler;
  #abort: ((reason?: Error) => void) | undefined;
  #resume: (() => void) | undefined;
  // The controller's state, plain fields: only the attempt holds this link.
  paused = false;
  aborted = false;
  reason: Error | null = null;
  rawHeaders: Buffer[] | null = null;
  rawTrailers: Buffer[] | null = null;

  constructor(attempt: Dispatcher.DispatchHandler) {
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
    this.#attempt.onRequestStart?.(this, context);
  }

  onHeaders(
    statusCode: number,
    rawHeaders: Buffer[],
    resume: () => void,
    statusText?: string,
  ): boolean {
    this.#resume = resume;
    this.rawHeaders = rawHeaders;
    // No parsed headers: the attempt parses the raw ones if someone reads them whole.
    this.#attempt.onResponseStart?.(this, statusCode, undefined as never, statusText);
    return !this.paused;
  }

  onData(chunk: Buffer): boolean {
    this.#attempt.onResponseData?.(this, chunk);
    return !this.paused;
  }

  onComplete(rawTrailers: Buffer[] | null): void {
    this.rawTrailers = rawTrailers;
    // Trailers are rare: parsed only when there are some.
    const trailers =
      rawTrailers === null || rawTrailers.length === 0
        ? NO_HEADERS
        : (undici.util.parseHeaders(rawTrailers) as IncomingHttpHeaders);
    this.#attempt.onResponseEnd?.(this, trailers);
  }

  onError(error: Error): void {
    this.#attempt.onResponseError?.(this, error);
  }
}
