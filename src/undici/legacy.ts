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

type Controller = Dispatcher.DispatchController & {
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
export function isNewApi(handler: object): handler is Dispatcher.DispatchHandler {
  return typeof (handler as Dispatcher.DispatchHandler).onRequestStart === 'function';
}

/**
 * The class undici 7's `compose` wraps a legacy caller's handler in before
 * an interceptor sees it (`WrapHandler`, not exported), found once by
 * composing a probe; `undefined` where `compose` wraps nothing (undici 8).
 */
const WRAPPER: unknown = (() => {
  const caller: LegacyHandler = { onHeaders: () => true };
  let seen: unknown;
  class Probe extends undici.Dispatcher {
    override dispatch(): boolean {
      return true;
    }
  }
  try {
    const probe = new Probe().compose((_dispatch) => (_opts, handler) => {
      seen = handler;
      return true;
    });
    probe.dispatch({ origin: 'http://127.0.0.1', path: '/', method: 'GET' }, caller as never);
  } catch {
    return undefined;
  }
  if (seen === caller || typeof seen !== 'object' || seen === null) return undefined;
  const wrapped = seen as Partial<Dispatcher.DispatchHandler & LegacyHandler>;
  const kind: unknown = wrapped.constructor;
  return typeof wrapped.onRequestStart === 'function' &&
    typeof wrapped.onHeaders === 'function' &&
    kind !== Object
    ? kind
    : undefined;
})();

/**
 * The legacy face of `handler` when it is undici 7's wrapper of a legacy
 * caller (what an interceptor of `compose` gets from `undici.request`): its
 * `onConnect`, `onHeaders`, `onData`, `onComplete` and `onError` are the
 * caller's own, called straight through, so an interceptor that speaks the
 * legacy API to the dispatcher below spares undici's two conversions (the
 * headers parsed, rebuilt as Buffers, parsed again). Otherwise `undefined`.
 */
function legacyFaceOf(handler: object): LegacyHandler | undefined {
  return WRAPPER !== undefined && handler.constructor === WRAPPER
    ? (handler as LegacyHandler)
    : undefined;
}

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
 * The caller's handler on the current API: `handler` itself, the legacy
 * caller inside undici 7's `compose` wrapper, or any other legacy handler,
 * each adapted by {@link LegacyCaller}.
 */
export function currentApi(handler: object): Dispatcher.DispatchHandler {
  const legacy = legacyFaceOf(handler);
  if (legacy !== undefined) return new LegacyCaller(legacy);
  return isNewApi(handler) ? handler : new LegacyCaller(handler as LegacyHandler);
}

export class LegacyCaller implements Dispatcher.DispatchHandler {
  readonly #handler: LegacyHandler;

  constructor(handler: LegacyHandler) {
    this.#handler = handler;
  }

  onRequestStart(controller: Controller, context: unknown): void {
    this.#handler.onConnect?.((reason) => controller.abort(reason as Error), context);
  }

  onResponseStart(
    controller: Controller,
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

  onResponseData(controller: Controller, chunk: Buffer): void {
    if (this.#handler.onData?.(chunk) === false) controller.pause();
  }

  onResponseEnd(controller: Controller, trailers: IncomingHttpHeaders): void {
    this.#handler.onComplete?.(controller.rawTrailers ?? toRaw(trailers));
  }

  onResponseError(_controller: Controller, error: Error): void {
    const h = this.#handler;
    if (typeof h.onError !== 'function') throw error;
    h.onError(error);
  }
}
