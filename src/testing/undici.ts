/**
 * `staunch/testing/undici`: an undici `Dispatcher` that fails by the same
 * script as `faultFetch` and counts what it saw, for code that takes a
 * dispatcher (`staunch/undici`'s interceptor, undici's `request` and
 * `fetch`). Faults never touch a socket: the handler is called as undici's
 * own client would call it, with errors carrying the codes undici's carry.
 * `'pass'` goes to the wrapped dispatcher (by default undici's global one).
 * Needs undici 7 or 8; the rest of `staunch/testing` does not.
 */
import { Dispatcher, getGlobalDispatcher } from 'undici';
import { type Clock, systemClock } from '../internal/clock.js';
import { checkObject, describe } from '../internal/validate.js';
import { networkError, stall, truncatedError } from './fetch.js';
import { createScript, label, type Plan, SCRIPT_KEYS, type ScriptOptions } from './script.js';
import { Seen } from './seen.js';

/** Options of {@link faultDispatcher}. */
export interface FaultDispatcherOptions extends ScriptOptions {
  /** Answers the `'pass'` steps. @default undici's global dispatcher */
  dispatcher?: Dispatcher;
  /** Times `delay` and `drip`. @default the system clock */
  clock?: Clock;
}

/** The handler methods the dispatcher calls: undici's current API, or the legacy one. */
interface AnyHandler {
  onRequestStart?(controller: Controller, context: object): void;
  onResponseStart?(
    controller: Controller,
    status: number,
    headers: Record<string, string>,
    text: string,
  ): void;
  onResponseData?(controller: Controller, chunk: Buffer): void;
  onResponseEnd?(controller: Controller, trailers: Record<string, string>): void;
  onResponseError?(controller: Controller, error: Error): void;
  onConnect?(abort: (reason?: unknown) => void, context?: object): void;
  onHeaders?(status: number, raw: Buffer[], resume: () => void, text: string): unknown;
  onData?(chunk: Buffer): unknown;
  onComplete?(trailers: Buffer[]): void;
  onError?(error: Error): void;
}

/** What undici hands a handler to abort, pause and resume: here, only abort acts. */
class Controller {
  readonly #abort = new AbortController();
  paused = false;
  /** The response head as undici's client exposes it (undici 8's fetch reads headers from here). */
  rawHeaders: Buffer[] | undefined;
  get aborted(): boolean {
    return this.#abort.signal.aborted;
  }
  get reason(): unknown {
    return this.#abort.signal.reason;
  }
  get signal(): AbortSignal {
    return this.#abort.signal;
  }
  abort(reason?: unknown): void {
    this.#abort.abort(reason);
  }
  pause(): void {
    this.paused = true;
  }
  resume(): void {
    this.paused = false;
  }
}

/** Calls one handler through either API. */
class Caller {
  readonly controller = new Controller();
  #done = false;
  constructor(readonly handler: AnyHandler) {}

  start(): void {
    const h = this.handler;
    if (h.onRequestStart) h.onRequestStart(this.controller, {});
    else h.onConnect?.((reason) => this.controller.abort(reason), {});
  }

  head(status: number, headers: readonly (readonly [string, string])[]): void {
    const h = this.handler;
    const text = STATUS_TEXT[status] ?? '';
    const raw = headers.flatMap(([k, v]) => [Buffer.from(k, 'latin1'), Buffer.from(v, 'latin1')]);
    this.controller.rawHeaders = raw;
    if (h.onResponseStart) {
      h.onResponseStart(this.controller, status, Object.fromEntries(headers), text);
    } else {
      h.onHeaders?.(status, raw, () => this.controller.resume(), text);
    }
  }

  data(chunk: Uint8Array): void {
    const buffer = Buffer.from(chunk);
    if (this.handler.onResponseData) this.handler.onResponseData(this.controller, buffer);
    else this.handler.onData?.(buffer);
  }

  end(): void {
    if (this.#done) return;
    this.#done = true;
    if (this.handler.onResponseEnd) this.handler.onResponseEnd(this.controller, {});
    else this.handler.onComplete?.([]);
  }

  error(error: unknown): void {
    if (this.#done) return;
    this.#done = true;
    const e = error instanceof Error ? error : new Error(String(error));
    if (this.handler.onResponseError) this.handler.onResponseError(this.controller, e);
    else this.handler.onError?.(e);
  }
}

const STATUS_TEXT: Record<number, string> = {
  200: 'OK',
  201: 'Created',
  204: 'No Content',
  409: 'Conflict',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

/** Lower-case header names and values, from any of the shapes undici accepts. */
function headerRecord(headers: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  const add = (name: unknown, value: unknown) => {
    if (value === undefined || value === null) return;
    const key = String(name).toLowerCase();
    const text = Array.isArray(value) ? value.join(', ') : String(value);
    out[key] = key in out ? `${out[key]}, ${text}` : text;
  };
  if (Array.isArray(headers)) {
    if (headers.every((h) => Array.isArray(h))) for (const [k, v] of headers) add(k, v);
    else for (let i = 0; i + 1 < headers.length; i += 2) add(headers[i], headers[i + 1]);
  } else if (headers && typeof headers === 'object') {
    const entries =
      Symbol.iterator in headers
        ? [...(headers as Iterable<[string, unknown]>)]
        : Object.entries(headers);
    for (const [k, v] of entries) add(k, v);
  }
  return out;
}

/** The request body's bytes, whatever undici was given (string, bytes, stream, iterable). */
async function bodyBytes(body: unknown): Promise<Uint8Array> {
  if (body === undefined || body === null) return new Uint8Array(0);
  if (typeof body === 'string') return new TextEncoder().encode(body);
  if (body instanceof Uint8Array) return body;
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  if (typeof (body as AsyncIterable<unknown>)[Symbol.asyncIterator] === 'function') {
    const chunks: Buffer[] = [];
    for await (const chunk of body as AsyncIterable<unknown>) {
      chunks.push(
        typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.from(chunk as Uint8Array),
      );
    }
    return new Uint8Array(Buffer.concat(chunks));
  }
  throw new TypeError(`faultDispatcher cannot read a request body of ${describe(body)}`);
}

type Respond = Extract<Plan, { kind: 'respond' }>;

/** Delivers a response step to the handler: after `delay`, the head, then the body (dripping, cut). */
async function respond(call: Caller, plan: Respond, clock: Clock): Promise<void> {
  const { signal } = call.controller;
  if (plan.delay > 0) await clock.sleep(plan.delay, signal);
  const headers = [...plan.headers, ['content-length', String(plan.body.length)] as const];
  call.head(plan.status, headers);
  const end = plan.truncate ?? plan.body.length;
  const step = plan.drip > 0 ? plan.chunk : end;
  for (let offset = 0; offset < end; offset += step) {
    if (offset > 0) await clock.sleep(plan.drip, signal);
    if (signal.aborted) throw signal.reason;
    call.data(plan.body.slice(offset, Math.min(end, offset + step)));
  }
  if (plan.truncate !== undefined) throw truncatedError().cause as Error;
  call.end();
}

/**
 * An undici `Dispatcher` that answers each request with the next step of
 * `script`, then `after` (or a seeded `chance`), and records every request.
 */
export class FaultDispatcher extends Dispatcher {
  /** Every request, in order, with the step it was answered with. */
  readonly seen: Seen = new Seen();
  readonly #next: () => Plan;
  readonly #clock: Clock;
  readonly #pass: Dispatcher | undefined;
  #count = 0;

  constructor(options: FaultDispatcherOptions = {}) {
    super();
    const o = checkObject('faultDispatcher options', options, [
      ...SCRIPT_KEYS,
      'dispatcher',
      'clock',
    ]);
    if (
      o.dispatcher !== undefined &&
      typeof (o.dispatcher as Dispatcher)?.dispatch !== 'function'
    ) {
      throw new TypeError(
        `faultDispatcher options.dispatcher must be a Dispatcher, got ${describe(o.dispatcher)}`,
      );
    }
    if (o.clock !== undefined && typeof (o.clock as Clock | null)?.sleep !== 'function') {
      throw new TypeError(
        `faultDispatcher options.clock must be a Clock, got ${describe(o.clock)}`,
      );
    }
    this.#next = createScript(options);
    this.#clock = options.clock ?? systemClock;
    this.#pass = options.dispatcher;
  }

  override dispatch(
    options: Dispatcher.DispatchOptions,
    handler: Dispatcher.DispatchHandler,
  ): boolean {
    void this.#run(options, handler);
    return true;
  }

  async #run(
    options: Dispatcher.DispatchOptions,
    handler: Dispatcher.DispatchHandler,
  ): Promise<void> {
    const index = this.#count++;
    const call = new Caller(handler as unknown as AnyHandler);
    try {
      const bytes = await bodyBytes(options.body);
      const plan = this.#next();
      this.seen.record({
        index,
        method: options.method,
        url: new URL(options.path, String(options.origin ?? '')).href,
        headers: headerRecord(options.headers),
        bytes,
        fault: label(plan),
      });
      if (plan.kind === 'pass') {
        const inner = this.#pass ?? getGlobalDispatcher();
        inner.dispatch({ ...options, body: bytes.length > 0 ? Buffer.from(bytes) : null }, handler);
        return;
      }
      call.start();
      if (call.controller.aborted) throw call.controller.reason;
      if (plan.kind === 'refuse') throw networkError('ECONNREFUSED').cause;
      if (plan.kind === 'reset') throw networkError('ECONNRESET').cause;
      if (plan.kind === 'stall') await stall(call.controller.signal);
      if (plan.kind === 'respond') await respond(call, plan, this.#clock);
    } catch (error) {
      call.error(error);
    }
  }

  override close(): Promise<void> {
    return Promise.resolve();
  }

  override destroy(): Promise<void> {
    return Promise.resolve();
  }
}

/**
 * A {@link FaultDispatcher}.
 * @example
 * const dispatcher = faultDispatcher({ script: ['reset', 503] });
 * await request(url, { dispatcher }); // undici's request, through the faults
 */
export function faultDispatcher(options?: FaultDispatcherOptions): FaultDispatcher {
  return new FaultDispatcher(options);
}
