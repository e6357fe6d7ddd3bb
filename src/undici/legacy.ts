/**
 * The adaptor for a caller on undici's legacy handler API (`onConnect`,
 * `onHeaders`, `onData`, `onComplete`, `onError`: what `undici.request`,
 * `stream`, `pipeline` and undici 7's `fetch` hand a dispatcher), seen
 * through the current API that staunch's handlers speak. undici's own
 * converter (`WrapHandler`) rebuilds the response headers from the parsed
 * object, lower-cased; this one hands on the raw headers undici read
 * (`controller.rawHeaders`, undici 7), as a bare `Agent` does.
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

/** Does this handler speak the new API? (undici's own test: `onRequestStart` present.) */
function isNewApi(handler: object): handler is Dispatcher.DispatchHandler {
  return typeof (handler as Dispatcher.DispatchHandler).onRequestStart === 'function';
}

/**
 * undici's own handler conversions, found once by a probe through a composed
 * `Agent` whose origin's dispatcher only records the handler it gets (no
 * connection is made). `WRAPPER`: the class undici 7's `compose` wraps a
 * legacy caller's handler in before an interceptor sees it (`WrapHandler`,
 * not exported); `undefined` where `compose` wraps nothing (undici 8).
 * `LEGACY_NATIVE`: the `Agent` converts a current-API handler to the legacy
 * API before its connections see it (undici 7; native.ts).
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
