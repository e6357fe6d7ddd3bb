/**
 * `createFetch`: the fetch adapter. It turns a fetch call into a logical
 * request for the executor and keeps fetch's signature: same arguments (plus
 * the `staunch` field and the `idempotencyKey` shorthand on the init), same
 * `Response`.
 */
import {
  type AttemptBody,
  cancelStreamBody,
  encodeFormData,
  isFixedBody,
  prepareBody,
} from './body.js';
import { CLIENT_KEYS, type ClientOptions, type Runtime, resolveRuntime } from './client.js';
import { emit } from './events.js';
import type { Exchange, LogicalRequest } from './executor/index.js';
import { hasHeader, headerPairs, headerValue, withHeader } from './fetch-headers.js';
import { discardResponse, keepLinkWhileBodyLives } from './fetch-response.js';
import type { Random } from './internal/clock.js';
import { steadyDeadlines } from './internal/deadlines.js';
import { collectSecrets, redactUrl } from './internal/redact.js';
import { checkObject, describe, keysOf } from './internal/validate.js';
import { checkHeaderName } from './options.js';
import { describeReplay, type ReplayRequest } from './replay.js';
import {
  checkSignal,
  idempotencyOf,
  type RequestSettings,
  readRequestOptions,
  type StaunchRequestOptions,
  upperMethod,
} from './request-options.js';
import {
  type ResolvedResumeOptions,
  type ResumeOptions,
  resolveResumeOptions,
  withResume,
} from './resume.js';
import { markInvalid, refusedByFetch } from './retry/classify.js';

/** Any WHATWG fetch: Node's global, npm undici's, Deno's, Bun's, a browser's. */
export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

/** Options of `createFetch`. Durations are in ms. */
export interface StaunchOptions extends ClientOptions {
  /** The transport. @default globalThis.fetch */
  fetch?: FetchLike;
  /**
   * Resume a GET whose body fails mid-stream with range requests checked
   * against a strong ETag (`If-Match`) or Last-Modified (`If-Range`); a
   * server that cannot resume fails the body with a `ResumeError`.
   * @default false
   * @see docs/cli.md#resumable-downloads
   */
  resume?: boolean | ResumeOptions;
  /**
   * A header that carries the retry index (`x-stainless-retry-count`, which
   * the OpenAI and Anthropic SDKs send): staunch sets it to 1, 2… on its own
   * retries, and a request that arrives with it above 0 was retried by an
   * outer layer: from then on this client sends every request that carries
   * the header once (one retry layer), and says so once (`on.outerRetry`).
   * @default none
   * @see docs/fetch.md#hooks-for-provider-aware-clients
   */
  retryCountHeader?: string;
}

export type { StaunchRequestOptions } from './request-options.js';

/**
 * `RequestInit` plus staunch's per-request field, `staunch`, removed before
 * the transport sees the init. Top-level `retry` and `timeout` are not
 * staunch's: wrappers such as ofetch pass their own option bags to the fetch
 * they wrap, and those keys go through to the transport untouched.
 */
export interface StaunchRequestInit extends RequestInit {
  /** staunch's per-request overrides. @default {} */
  staunch?: StaunchRequestOptions | undefined;
  /** Shorthand for `staunch.idempotencyKey`. @default none */
  idempotencyKey?: string | undefined;
}

/** The function `createFetch` returns: a fetch. */
export type StaunchFetch = (
  input: string | URL | Request,
  init?: StaunchRequestInit,
) => Promise<Response>;

const OPTION_KEYS: readonly string[] = [
  ...keysOf<Omit<StaunchOptions, keyof ClientOptions>>()(['fetch', 'resume', 'retryCountHeader']),
  ...CLIENT_KEYS,
];

/**
 * Creates a fetch that retries only what is safe, honours the server's pacing
 * and holds its deadlines.
 *
 * @example
 * const fetch = createFetch({ retry: { attempts: 4 }, timeout: { total: 10_000 } });
 * const res = await fetch('https://api.example.com/orders', {
 *   method: 'POST', body: JSON.stringify(order), idempotencyKey: order.id,
 *   staunch: { timeout: { total: 5_000 } },
 * });
 */
export function createFetch(options: StaunchOptions = {}): StaunchFetch {
  const o = checkObject('createFetch options', options, OPTION_KEYS) as StaunchOptions;
  const transport = o.fetch ?? (globalThis.fetch as FetchLike | undefined);
  if (typeof transport !== 'function') {
    throw new TypeError(`fetch must be a function, got ${describe(transport)}`);
  }
  const resume = resolveResumeOptions(o.resume);
  const countHeader =
    o.retryCountHeader === undefined
      ? undefined
      : checkHeaderName('retryCountHeader', o.retryCountHeader);
  const runtime = resolveRuntime(o);
  const client: FetchRuntime = {
    ...runtime,
    freshKey: () => uuid(runtime.random),
    transport,
    steadyDeadlines: steadyDeadlines(transport),
    resume,
    layers: countHeader === undefined ? undefined : { header: countHeader, outer: false },
  };

  return (input, init) => send(client, input, init);
}

interface FetchRuntime extends Runtime {
  readonly transport: FetchLike;
  /** The transport is staunch/undici's: its attempts' deadlines go on the steady list. */
  readonly steadyDeadlines: boolean;
  readonly resume: ResolvedResumeOptions | undefined;
  /** A fresh idempotency key (`idempotency.auto`). */
  readonly freshKey: () => string;
  /** `retryCountHeader`, and whether an outer retry layer was seen. */
  readonly layers: { readonly header: string; outer: boolean } | undefined;
}

type Init = Omit<StaunchRequestInit, 'staunch' | 'idempotencyKey'>;

/**
 * One call of the client's fetch. Synchronous up to the executor's promise
 * (no async frame of its own, no promise adopted through another) unless the
 * input is a `Request` or the body a FormData to encode, which take a turn
 * first. A mistake in the arguments is a rejection, never a throw.
 */
function send(
  client: FetchRuntime,
  input: string | URL | Request,
  init: StaunchRequestInit | undefined,
): Promise<Response> {
  try {
    let base: Init;
    let settings: RequestSettings;
    if (init === undefined) {
      base = {};
      settings = client.defaults;
    } else {
      const { staunch, idempotencyKey, ...rest } = init;
      checkSignal('init.signal', rest.signal);
      base = rest;
      settings = readRequestOptions(client, staunch, 'init.staunch', {
        value: idempotencyKey,
        path: 'init.idempotencyKey',
      });
    }
    if (typeof input === 'string') return prepared(client, input, base, settings);
    if (input instanceof URL) return prepared(client, input.href, base, settings);
    if (isRequest(input)) {
      return fromRequest(input, base).then((b) => prepared(client, input.url, b, settings));
    }
    throw new TypeError(`fetch input must be a string, URL or Request, got ${describe(input)}`);
  } catch (error) {
    cancelStreamBody(init?.body, error);
    return Promise.reject(error);
  }
}

/** {@link send} once the input is a URL string and plain init values. Throws on a mistake. */
function prepared(
  client: FetchRuntime,
  url: string,
  base: Init,
  settings: RequestSettings,
): Promise<Response> {
  let { retry } = settings;
  const method = upperMethod(base.method ?? 'GET');
  const layers = client.layers;
  if (layers !== undefined && retry.attempts > 1 && oneLayer(client, layers, method, url, base)) {
    retry = { ...retry, attempts: 1 };
  }
  const { header } = client.idempotency;
  const { key, replayable } = idempotencyOf(
    method,
    settings,
    client.idempotency,
    base.headers,
    hasHeader,
    client.freshKey,
  );
  if (key !== undefined) base.headers = withHeader(base.headers, header, key);

  const body = prepareBody(base.body, retry.attempts > 1);
  if (body !== undefined) {
    return launch(
      client,
      base,
      new FetchCall(client, url, base, method, replayable, retry, settings, body),
      body.end,
    );
  }
  return encodeFormData(base.body as FormData).then((encoded) => {
    if (encoded.contentType !== undefined && !hasHeader(base.headers, 'content-type')) {
      base.headers = withHeader(base.headers, 'content-type', encoded.contentType);
    }
    const call = new FetchCall(
      client,
      url,
      base,
      method,
      replayable,
      retry,
      settings,
      encoded.body,
    );
    call.replayBody = encoded.body.next();
    return launch(client, base, call);
  });
}

/**
 * One call of the client's fetch as the executor sees it: the logical
 * request and its exchange in one object (one allocation on the hot path,
 * where object literals and their closures were nine).
 */
class FetchCall implements LogicalRequest, Exchange<Response> {
  readonly method: string;
  readonly url: string;
  readonly replayable: boolean;
  readonly signal: AbortSignal | undefined;
  readonly retry: RequestSettings['retry'];
  readonly timeout: RequestSettings['timeout'];
  /** Hedging, for a body every attempt may send at once (never a stream). */
  readonly hedge: RequestSettings['hedge'];
  /** The body when it is a string, for the policy key. */
  readonly body: string | undefined;
  readonly #client: FetchRuntime;
  readonly #base: Init;
  readonly #body: AttemptBody;
  /** The bytes a FormData body was encoded to, for `replay`. */
  replayBody: unknown;

  constructor(
    client: FetchRuntime,
    url: string,
    base: Init,
    method: string,
    replayable: boolean,
    retry: RequestSettings['retry'],
    settings: RequestSettings,
    body: AttemptBody,
  ) {
    this.#client = client;
    this.url = url;
    this.#base = base;
    this.method = method;
    this.replayable = replayable;
    this.retry = retry;
    this.timeout = settings.timeout;
    this.hedge = isFixedBody(body) ? settings.hedge : undefined;
    this.signal = base.signal ?? undefined;
    this.body = typeof base.body === 'string' ? base.body : undefined;
    this.#body = body;
  }

  get steadyDeadlines(): boolean {
    return this.#client.steadyDeadlines;
  }

  secrets(): readonly string[] {
    return collectSecrets(this.url, headerPairs(this.#base.headers));
  }

  keyed(): boolean {
    return hasHeader(this.#base.headers, this.#client.idempotency.lower);
  }

  replay(): ReplayRequest | undefined {
    const { method, url } = this;
    const base = this.#base;
    const header = this.#client.idempotency.header;
    return describeReplay(
      method,
      url,
      headerPairs(base.headers),
      this.replayBody ?? base.body,
      header,
    );
  }

  send(signal: AbortSignal, attempt: number): Promise<Response> {
    const { url } = this;
    const base = this.#base;
    const init: RequestInit = {
      ...base,
      body: this.#body.next() as NonNullable<RequestInit['body']>,
      signal,
    };
    const layers = this.#client.layers;
    if (layers !== undefined && attempt > 1) {
      init.headers = withHeader(base.headers, layers.header, String(attempt - 1));
    }
    let sent: Promise<Response>;
    try {
      sent = this.#client.transport(url, init);
    } catch (error) {
      return Promise.reject(refused(url, signal, init, error));
    }
    return sent.catch((error: unknown) => Promise.reject(refused(url, signal, init, error)));
  }

  status(response: Response): number {
    return response.status;
  }

  headers(response: Response): Headers {
    return response.headers;
  }

  discard(response: Response, stop: Promise<unknown>): Promise<void> {
    return discardResponse(response, stop);
  }

  resendable(unsent: boolean): boolean {
    return this.#body.resendable(unsent);
  }

  handOver(response: Response, unlink: () => void): void {
    keepLinkWhileBodyLives(response, unlink);
  }
}

/** A request the runtime refused before sending is the caller's mistake (classify.ts). */
function refused(url: string, signal: AbortSignal, init: RequestInit, error: unknown): unknown {
  return signal.aborted || !refusedByFetch(url, init, error) ? error : markInvalid(error);
}

/** Hands the call to the executor; `end` cancels a stream body when the request fails. */
function launch(
  client: FetchRuntime,
  base: Init,
  call: FetchCall,
  end?: (reason: unknown) => void,
): Promise<Response> {
  const { method, url } = call;
  let response = client.executor.run(call, call);
  if (end !== undefined) {
    response = response.then(undefined, (reason: unknown) => {
      end(reason);
      throw reason;
    });
  }
  if (client.resume === undefined) return response;
  return withResume(response, client.resume, method, url, base, (headers) =>
    send(client, url, { ...base, headers }),
  );
}

/**
 * One retry layer: a request whose retry-count header is above 0 was retried
 * by an outer layer (said once per client); from then on every request that
 * carries the header is left to that layer. True: send this one once.
 */
function oneLayer(
  client: FetchRuntime,
  layers: { readonly header: string; outer: boolean },
  method: string,
  url: string,
  base: Init,
): boolean {
  const raw = headerValue(base.headers, layers.header)?.trim();
  if (raw === undefined) return false;
  const value = /^\d+$/.test(raw) ? Number(raw) : 0;
  if (value > 0 && !layers.outer) {
    layers.outer = true;
    emit(client.on.outerRetry, { method, url: redactUrl(url), header: layers.header, value });
  }
  return layers.outer;
}

function isRequest(input: unknown): input is Request {
  return (
    (typeof Request !== 'undefined' && input instanceof Request) ||
    (typeof input === 'object' &&
      input !== null &&
      typeof (input as Request).url === 'string' &&
      typeof (input as Request).clone === 'function' &&
      typeof (input as Request).arrayBuffer === 'function')
  );
}

/**
 * A `Request` becomes plain init values (the transport may be another fetch
 * implementation that rejects this `Request` class). Its body is read once,
 * from a clone, so that every attempt can send it and the caller's `Request`
 * stays unread. Fields of `init` win, as in `fetch(request, init)`.
 */
async function fromRequest(request: Request, init: Init): Promise<Init> {
  const out: Init = {
    method: request.method,
    headers: [...request.headers],
    signal: request.signal,
    redirect: request.redirect,
    credentials: request.credentials,
    referrerPolicy: request.referrerPolicy,
    integrity: request.integrity,
    keepalive: request.keepalive,
  };
  if (request.body !== null && init.body === undefined) {
    out.body = await request.clone().arrayBuffer();
  }
  return Object.assign(out, init);
}

function uuid(random: Random): string {
  const c = (globalThis as { crypto?: { randomUUID?: () => string } }).crypto;
  if (typeof c?.randomUUID === 'function') return c.randomUUID();
  // RFC 9562 §5.4 layout from the injected random source.
  const hex = Array.from({ length: 32 }, () => Math.floor(random() * 16).toString(16));
  hex[12] = '4';
  hex[16] = ((Number.parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  const s = hex.join('');
  return `${s.slice(0, 8)}-${s.slice(8, 12)}-${s.slice(12, 16)}-${s.slice(16, 20)}-${s.slice(20)}`;
}
