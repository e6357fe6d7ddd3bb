/**
 * `createFetch`: the fetch adapter. It turns a fetch call into a logical
 * request for the executor and keeps fetch's signature: same arguments (plus
 * `retry`, `timeout`, `idempotencyKey` on the init), same `Response`.
 */
import { type AttemptBody, encodeFormData, prepareBody } from './body.js';
import { emit, type StaunchListeners } from './events.js';
import { type Exchange, Executor, type LogicalRequest } from './executor.js';
import { type Clock, noop, type Random, systemClock } from './internal/clock.js';
import { collectSecrets } from './internal/redact.js';
import { checkObject, describe } from './internal/validate.js';
import {
  checkClock,
  checkRandom,
  type IdempotencyOptions,
  type ResolvedIdempotencyOptions,
  type ResolvedRetryOptions,
  type ResolvedTimeoutOptions,
  type RetryOptions,
  resolveIdempotencyOptions,
  resolveRetryOptions,
  resolveTimeoutOptions,
  type TimeoutOptions,
} from './options.js';
import { createPolicies, type PolicyOptions } from './policy/policies.js';
import { describeReplay } from './replay.js';
import { memoryStore } from './store/memory.js';
import type { StateStore } from './store/store.js';

/** Any WHATWG fetch: Node's global, npm undici's, Deno's, Bun's, a browser's. */
export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

/** Options of `createFetch`. Durations are in ms. */
export interface StaunchOptions extends PolicyOptions {
  /** The transport. @default globalThis.fetch */
  fetch?: FetchLike;
  /** Retry policy; a number is the attempts, `false` is one attempt. */
  retry?: RetryOptions | number | boolean;
  /** Deadlines; a number is `{ total }`, `false` disables both. */
  timeout?: TimeoutOptions | number | false;
  idempotency?: IdempotencyOptions;
  /** Typed event listeners. */
  on?: StaunchListeners;
  /** Time source, for tests and the lab's simulator. @default systemClock */
  clock?: Clock;
  /** Random source in [0, 1). @default Math.random */
  random?: Random;
}

/** `RequestInit` plus staunch's per-request fields (removed before the transport sees the init). */
export interface StaunchRequestInit extends RequestInit {
  /** Overrides the client's retry options for this request. */
  retry?: RetryOptions | number | boolean | undefined;
  /** Overrides the client's deadlines for this request. */
  timeout?: TimeoutOptions | number | false | undefined;
  /** Sent in the idempotency header; makes any method replayable. */
  idempotencyKey?: string | undefined;
}

/** The function `createFetch` returns: a fetch. */
export type StaunchFetch = (
  input: string | URL | Request,
  init?: StaunchRequestInit,
) => Promise<Response>;

const OPTION_KEYS = [
  'fetch',
  'retry',
  'timeout',
  'idempotency',
  'on',
  'clock',
  'random',
  'breaker',
  'budget',
  'rateLimit',
  'concurrency',
  'store',
  'key',
] as const;
const LISTENER_KEYS = [
  'attemptStart',
  'attempt',
  'retry',
  'giveUp',
  'breakerStateChange',
  'storeDegraded',
  'storeRecovered',
] as const;

/** Bytes of a failed response read so that its connection can be reused; past that it is cancelled. */
const DRAIN_LIMIT = 64 * 1024;

/**
 * Creates a fetch that retries only what is safe, honours the server's pacing
 * and holds its deadlines.
 *
 * @example
 * const fetch = createFetch({ retry: { attempts: 4 }, timeout: { total: 10_000 } });
 * const res = await fetch('https://api.example.com/orders', {
 *   method: 'POST', body: JSON.stringify(order), idempotencyKey: order.id,
 * });
 */
export function createFetch(options: StaunchOptions = {}): StaunchFetch {
  const o = checkObject('createFetch options', options, OPTION_KEYS) as StaunchOptions;
  const transport = o.fetch ?? (globalThis.fetch as FetchLike | undefined);
  if (typeof transport !== 'function') {
    throw new TypeError(`fetch must be a function, got ${describe(transport)}`);
  }
  const on = o.on === undefined ? {} : (checkObject('on', o.on, LISTENER_KEYS) as StaunchListeners);
  for (const [name, listener] of Object.entries(on)) {
    if (listener !== undefined && typeof listener !== 'function') {
      throw new TypeError(`on.${name} must be a function, got ${describe(listener)}`);
    }
  }
  const retry = resolveRetryOptions(o.retry);
  const timeout = resolveTimeoutOptions(o.timeout);
  const idempotency = resolveIdempotencyOptions(o.idempotency);
  const clock = checkClock(o.clock) ?? systemClock;
  const random = checkRandom(o.random) ?? Math.random;
  const store = o.store ?? memoryStore();
  if (typeof (store as Partial<StateStore>).run !== 'function') {
    throw new TypeError(
      `store must be a StateStore (memoryStore(), redisStore()), got ${describe(store)}`,
    );
  }
  const listeners = { ...on };
  const onStateChange = listeners.breakerStateChange;
  const policies = createPolicies(
    o,
    store,
    clock,
    onStateChange && ((change) => emit(onStateChange, { ...change })),
  );
  if (typeof store.onStatus === 'function') {
    const { storeDegraded, storeRecovered } = listeners;
    if (storeDegraded !== undefined || storeRecovered !== undefined) {
      store.onStatus(({ status, error }) =>
        emit(
          status === 'degraded' ? storeDegraded : storeRecovered,
          error === undefined ? {} : { error },
        ),
      );
    }
  }
  const executor = new Executor({ clock, random, on: listeners, policies });
  const client: Client = { transport, retry, timeout, idempotency, executor, random };

  return (input, init) => send(client, input, init);
}

interface Client {
  transport: FetchLike;
  retry: ResolvedRetryOptions;
  timeout: ResolvedTimeoutOptions;
  idempotency: ResolvedIdempotencyOptions;
  executor: Executor;
  random: Random;
}

type Headers_ = RequestInit['headers'];
type Init = Omit<StaunchRequestInit, 'retry' | 'timeout' | 'idempotencyKey'>;

async function send(
  client: Client,
  input: string | URL | Request,
  init: StaunchRequestInit | undefined,
): Promise<Response> {
  let url: string;
  let base: Init;
  let retry = client.retry;
  let timeout = client.timeout;
  let key: string | undefined;
  if (init === undefined) {
    base = {};
  } else {
    const { retry: r, timeout: t, idempotencyKey, ...rest } = init;
    base = rest;
    if (r !== undefined) retry = resolveRetryOptions(r, client.retry, 'init.retry');
    if (t !== undefined) timeout = resolveTimeoutOptions(t, client.timeout, 'init.timeout');
    if (idempotencyKey !== undefined) {
      if (typeof idempotencyKey !== 'string' || idempotencyKey === '') {
        throw new TypeError(
          `init.idempotencyKey must be a non-empty string, got ${describe(idempotencyKey)}`,
        );
      }
      key = idempotencyKey;
    }
  }

  if (typeof input === 'string') url = input;
  else if (input instanceof URL) url = input.href;
  else if (isRequest(input)) {
    url = input.url;
    base = await fromRequest(input, base);
  } else {
    throw new TypeError(`fetch input must be a string, URL or Request, got ${describe(input)}`);
  }

  const method = (base.method ?? 'GET').toUpperCase();
  const { header } = client.idempotency;
  if (key === undefined && !retry.methods.has(method) && client.idempotency.auto) {
    if (!hasHeader(base.headers, header)) key = uuid(client.random);
  }
  if (key !== undefined) base.headers = withHeader(base.headers, header, key);
  const replayable =
    retry.methods.has(method) || key !== undefined || hasHeader(base.headers, header);

  const retries = retry.attempts > 1;
  let body: AttemptBody | undefined = prepareBody(base.body, retries);
  let replayBody: unknown;
  if (body === undefined) {
    const encoded = await encodeFormData(base.body as FormData);
    body = encoded.body;
    replayBody = encoded.body.next();
    if (encoded.contentType !== undefined && !hasHeader(base.headers, 'content-type')) {
      base.headers = withHeader(base.headers, 'content-type', encoded.contentType);
    }
  }

  const signal = base.signal ?? undefined;
  const request: LogicalRequest = {
    method,
    url,
    replayable,
    signal,
    retry,
    timeout,
    secrets: () => collectSecrets(url, headerPairs(base.headers)),
    replay: () =>
      describeReplay(method, url, headerPairs(base.headers), replayBody ?? base.body, header),
  };
  const { transport } = client;
  const attemptBody = body;
  const exchange: Exchange<Response> = {
    send: (attemptSignal) =>
      transport(url, {
        ...base,
        body: attemptBody.next() as NonNullable<RequestInit['body']>,
        signal: attemptSignal,
      }),
    status: (response) => response.status,
    headers: (response) => response.headers,
    discard: discardResponse,
    resendable: attemptBody.resendable,
    handOver: keepLinkWhileBodyLives,
  };
  return client.executor.run(request, exchange);
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

function hasHeader(headers: Headers_ | undefined, name: string): boolean {
  if (headers === undefined) return false;
  const lower = name.toLowerCase();
  if (typeof (headers as Headers).has === 'function') return (headers as Headers).has(lower);
  if (Array.isArray(headers)) return headers.some(([n]) => n?.toLowerCase() === lower);
  return Object.keys(headers).some((n) => n.toLowerCase() === lower);
}

function withHeader(
  headers: Headers_ | undefined,
  name: string,
  value: string,
): [string, string][] {
  const h = new Headers(headers);
  h.set(name, value);
  return [...h];
}

function headerPairs(headers: Headers_ | undefined): Iterable<readonly [string, string]> {
  if (headers === undefined) return [];
  if (Array.isArray(headers)) return headers as [string, string][];
  if (typeof (headers as Headers).entries === 'function') return (headers as Headers).entries();
  return Object.entries(headers as Record<string, string>);
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

/**
 * Releases a failed response before the next attempt: reads up to
 * `DRAIN_LIMIT` bytes so the keep-alive connection can be reused, cancels past
 * that, and cancels whatever is left when `stop` settles (the backoff is over).
 */
async function discardResponse(response: Response, stop: Promise<unknown>): Promise<void> {
  const body = response.body;
  if (body === null || body.locked) return;
  const length = Number(response.headers.get('content-length'));
  if (length > DRAIN_LIMIT) {
    await body.cancel();
    return;
  }
  const reader = body.getReader();
  let stopped = false;
  const cancel = (): void => {
    if (stopped) return;
    stopped = true;
    reader.cancel().catch(noop);
  };
  stop.then(cancel, cancel);
  let read = 0;
  try {
    while (!stopped) {
      const { done, value } = await reader.read();
      if (done) {
        stopped = true;
        return;
      }
      read += value.byteLength;
      if (read > DRAIN_LIMIT) cancel();
    }
  } catch {
    cancel();
  }
}

/**
 * The caller's signal must still abort the body after the response is handed
 * back, so its link to the attempt stays until the body can no longer be read:
 * at once for a bodiless response, else when the body stream is collected.
 */
const bodyLinks = new FinalizationRegistry<() => void>((unlink) => unlink());

function keepLinkWhileBodyLives(response: Response, unlink: () => void): void {
  const body = response.body;
  if (body === null) unlink();
  else bodyLinks.register(body, unlink);
}
