/**
 * Options of the undici transport (`createAgent`, `createFetch`): per-phase
 * timeouts, the pool, HTTP/2, TLS, DNS and the SSRF guard. Resolved once,
 * validated (a TypeError/RangeError naming the option and the value), frozen.
 * The retry options (`retry`, `timeout`, policies…) are the core's, resolved
 * by `resolveRuntime` (client.ts); a request overrides some of them on its
 * dispatch options (`StaunchDispatchFields`).
 */

import type { LookupFunction } from 'node:net';
import type { ConnectionOptions } from 'node:tls';
import type { Dispatcher } from 'undici';
import { CLIENT_KEYS } from '../client.js';
import type { DeadlineHeader } from '../deadline-header.js';
import { MAX_TIMER_MS } from '../internal/limits.js';
import { checkNumber, checkObject, describe, keysOf } from '../internal/validate.js';
import type { HedgeOptions, RetryOptions, TimeoutOptions } from '../options.js';
import { resolveSsrfOptions, type SsrfOptions, type SsrfRules } from './ssrf.js';

/** Per-request options, on the dispatch options as `staunch: { … }`. */
export interface StaunchDispatchFields {
  /** Overrides the interceptor's retry options for this request. */
  retry?: RetryOptions | number | boolean;
  /** Overrides the interceptor's deadlines for this request. */
  timeout?: TimeoutOptions | number | false;
  /** Sent in the idempotency header; makes any method replayable. */
  idempotencyKey?: string;
  /** Overrides the interceptor's `deadlineHeader` for this request (`false`: none). */
  deadlineHeader?: DeadlineHeader;
  /** Overrides the interceptor's hedging for this request; `false`: none (docs/hedging.md). */
  hedge?: false | HedgeOptions;
}

/** Dispatch (or `undici.request`) options with staunch's per-request fields. */
export type StaunchDispatchOptions<T extends object = Dispatcher.DispatchOptions> = T & {
  staunch?: StaunchDispatchFields;
};

/** Timeouts per phase of one attempt, in ms. `0` disables one. */
export interface PhaseTimeouts {
  /**
   * DNS lookup, TCP connect and TLS handshake (undici's `connectTimeout`). A
   * route that has not connected in 10 s is dead; failing then lets the
   * request be retried at once, since nothing was sent.
   * @default 10_000
   */
  connect?: number;
  /**
   * From the request written to the last byte of the response headers
   * (undici's `headersTimeout`). Matches the default `timeout.attempt`, which
   * also counts the wait for a connection. While the two are equal,
   * `createAgent` leaves attempt 1's deadline to this timer once the request
   * is written (docs/undici.md, "Options"): it fires within about half a
   * second of its time.
   * @default 60_000
   */
  headers?: number;
  /**
   * Longest silence between two chunks of the response body (undici's
   * `bodyTimeout`), while the caller reads. Long, because streamed answers
   * (LLM tokens, server-sent events) pause between chunks.
   * @default 300_000
   */
  body?: number;
}

/** How long idle keep-alive connections are kept, in ms. */
export interface KeepAliveOptions {
  /**
   * Idle time after which an unused connection is closed when the server
   * sent no `Keep-Alive: timeout` hint (undici's `keepAliveTimeout`). Below
   * the 5 s of Node's own HTTP server and far below nginx (75 s) and cloud
   * load balancers (60 s), so that the client, not the server, closes first.
   * @default 4_000
   */
  idle?: number;
  /**
   * Taken off the server's `Keep-Alive: timeout` hint (undici's
   * `keepAliveTimeoutThreshold`, whose default this is), so the connection
   * is dropped before the server's own timer fires: it covers the round
   * trip and undici's keep-alive timer, which ticks every half second and
   * so may fire that much late. A hint at or below it: no reuse at all.
   * @default 2_000
   */
  margin?: number;
  /**
   * Upper bound on a hinted idle time (undici's `keepAliveMaxTimeout`).
   * Middleboxes (NAT gateways, load balancers) drop idle flows silently
   * after a few minutes, and a silently dropped flow costs a timeout.
   * @default 60_000
   */
  max?: number;
}

/** TLS options handed to `tls.connect` (a subset of `ConnectionOptions`). */
export type TlsOptions = Pick<
  ConnectionOptions,
  | 'ca'
  | 'cert'
  | 'key'
  | 'pfx'
  | 'passphrase'
  | 'servername'
  | 'rejectUnauthorized'
  | 'minVersion'
  | 'maxVersion'
  | 'ciphers'
  | 'checkServerIdentity'
>;

/** The transport options shared by `createAgent` and `createFetch`. */
export interface TransportOptions {
  /** Per-phase timeouts in ms. */
  timeouts?: PhaseTimeouts;
  /**
   * Connections per origin. Past this, requests queue in the pool (the
   * queue wait counts against `timeout.attempt`), instead of opening
   * thousands of sockets in a burst (ephemeral ports, the server's limits).
   * @default 50
   */
  connections?: number;
  /** Keep-alive pool settings. */
  keepAlive?: KeepAliveOptions;
  /**
   * Negotiate HTTP/2 over TLS (ALPN) when the server offers it. Off by
   * default, as in undici: HTTP/2 puts every request to an origin on one
   * TCP connection, where one lost packet stalls them all.
   * @default false
   */
  allowH2?: boolean;
  /** TLS options for `https:` origins (`ca`, `cert`, `key`, `servername`…). */
  tls?: TlsOptions;
  /** DNS lookup, as `net.connect` takes it (also called with `{ all: true }`). @default dns.lookup */
  lookup?: LookupFunction;
  /**
   * The SSRF guard, opt-in: `true`, or `{ allow, deny }` lists. Blocks
   * connections to non-public addresses (loopback, private, link-local,
   * unique-local, CGNAT, unspecified, NAT64, IPv4-mapped forms of those).
   * See docs/undici.md.
   * @default false
   */
  ssrf?: boolean | SsrfOptions;
}

export const TRANSPORT_KEYS: readonly string[] = keysOf<TransportOptions>()([
  'timeouts',
  'connections',
  'keepAlive',
  'allowH2',
  'tls',
  'lookup',
  'ssrf',
]);

const TLS_KEYS = keysOf<TlsOptions>()([
  'ca',
  'cert',
  'key',
  'pfx',
  'passphrase',
  'servername',
  'rejectUnauthorized',
  'minVersion',
  'maxVersion',
  'ciphers',
  'checkServerIdentity',
]);

/** @internal */
export interface ResolvedTransport {
  readonly connect: number;
  readonly headers: number;
  readonly body: number;
  readonly connections: number;
  readonly idle: number;
  readonly margin: number;
  readonly max: number;
  readonly allowH2: boolean;
  readonly tls: TlsOptions | undefined;
  readonly lookup: LookupFunction | undefined;
  readonly ssrf: SsrfRules | undefined;
}

/** The largest timer Node accepts (ms): 2^31 − 1. */

function duration(path: string, value: unknown, fallback: number, allowZero: boolean): number {
  if (value === undefined) return fallback;
  return checkNumber(path, value, {
    min: 0,
    exclusiveMin: !allowZero,
    max: MAX_TIMER_MS,
    integer: true,
  });
}

const TLS_VERSIONS: readonly string[] = ['TLSv1', 'TLSv1.1', 'TLSv1.2', 'TLSv1.3'];

/** A PEM string or its bytes. */
function isPem(value: unknown): boolean {
  return typeof value === 'string' || value instanceof Uint8Array;
}

/** One value, or an array of values, each accepted by `item`. */
function checkOneOrMany(
  path: string,
  value: unknown,
  item: (v: unknown) => boolean,
  what: string,
): void {
  const items = Array.isArray(value) ? value : [value];
  items.forEach((v, i) => {
    if (!item(v)) {
      const at = Array.isArray(value) ? `${path}[${i}]` : path;
      throw new TypeError(`${at} must be ${what}, got ${describe(v)}`);
    }
  });
}

/** `{ pem, passphrase }` (a key) or `{ buf, passphrase }` (a pfx), as `tls.connect` takes them. */
function isKeyObject(field: 'pem' | 'buf'): (v: unknown) => boolean {
  return (v) => {
    if (isPem(v)) return true;
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
    const o = v as Record<string, unknown>;
    return (
      isPem(o[field]) &&
      (o.passphrase === undefined || typeof o.passphrase === 'string') &&
      Object.keys(o).every((k) => k === field || k === 'passphrase')
    );
  };
}

/**
 * Validates the TLS options as `tls.connect` would read them, so that a
 * wrong type fails at construction, naming the option, and not at the first
 * handshake (or never: `rejectUnauthorized: 'no'` is truthy, so it would
 * silently keep verifying, and `0` would silently stop).
 */
function resolveTls(input: unknown, path: string): TlsOptions {
  const o = checkObject(path, input, TLS_KEYS);
  const pemList = 'a PEM string or Buffer, or an array of them';
  if (o.ca !== undefined) checkOneOrMany(`${path}.ca`, o.ca, isPem, pemList);
  if (o.cert !== undefined) checkOneOrMany(`${path}.cert`, o.cert, isPem, pemList);
  if (o.key !== undefined) {
    checkOneOrMany(`${path}.key`, o.key, isKeyObject('pem'), `${pemList} or { pem, passphrase }`);
  }
  if (o.pfx !== undefined) {
    checkOneOrMany(
      `${path}.pfx`,
      o.pfx,
      isKeyObject('buf'),
      'a Buffer or string, or { buf, passphrase }',
    );
  }
  for (const name of ['passphrase', 'ciphers'] as const) {
    if (o[name] !== undefined && typeof o[name] !== 'string') {
      throw new TypeError(`${path}.${name} must be a string, got ${describe(o[name])}`);
    }
  }
  if (o.servername !== undefined && (typeof o.servername !== 'string' || o.servername === '')) {
    throw new TypeError(`${path}.servername must be a host name, got ${describe(o.servername)}`);
  }
  if (o.rejectUnauthorized !== undefined && typeof o.rejectUnauthorized !== 'boolean') {
    throw new TypeError(
      `${path}.rejectUnauthorized must be a boolean, got ${describe(o.rejectUnauthorized)}`,
    );
  }
  for (const name of ['minVersion', 'maxVersion'] as const) {
    if (o[name] !== undefined && !TLS_VERSIONS.includes(o[name] as string)) {
      throw new TypeError(
        `${path}.${name} must be one of ${TLS_VERSIONS.join(', ')}, got ${describe(o[name])}`,
      );
    }
  }
  if (
    o.minVersion !== undefined &&
    o.maxVersion !== undefined &&
    TLS_VERSIONS.indexOf(o.minVersion as string) > TLS_VERSIONS.indexOf(o.maxVersion as string)
  ) {
    throw new RangeError(
      `${path}.maxVersion must be >= tls.minVersion (${String(o.minVersion)}), got ${describe(o.maxVersion)}`,
    );
  }
  if (o.checkServerIdentity !== undefined && typeof o.checkServerIdentity !== 'function') {
    throw new TypeError(
      `${path}.checkServerIdentity must be a function (host, cert), got ${describe(o.checkServerIdentity)}`,
    );
  }
  return Object.freeze({ ...o }) as TlsOptions;
}

/** Validates and freezes the transport options (messages name `timeouts.connect`…). */
export function resolveTransport(options: Record<string, unknown>): ResolvedTransport {
  const path = '';
  const t =
    options.timeouts === undefined
      ? {}
      : checkObject(`${path}timeouts`, options.timeouts, ['connect', 'headers', 'body']);
  const k =
    options.keepAlive === undefined
      ? {}
      : checkObject(`${path}keepAlive`, options.keepAlive, ['idle', 'margin', 'max']);
  const idle = duration(`${path}keepAlive.idle`, k.idle, 4_000, false);
  const margin = duration(`${path}keepAlive.margin`, k.margin, 2_000, true);
  const max = duration(`${path}keepAlive.max`, k.max, 60_000, false);
  if (max < idle) {
    throw new RangeError(
      `${path}keepAlive.max must be >= keepAlive.idle (${idle}), got ${describe(max)}`,
    );
  }
  const connections =
    options.connections === undefined
      ? 50
      : checkNumber(`${path}connections`, options.connections, {
          min: 1,
          max: 65_535,
          integer: true,
        });
  const allowH2 = options.allowH2 ?? false;
  if (typeof allowH2 !== 'boolean') {
    throw new TypeError(`${path}allowH2 must be a boolean, got ${describe(allowH2)}`);
  }
  const tls = options.tls === undefined ? undefined : resolveTls(options.tls, `${path}tls`);
  const lookup = options.lookup;
  if (lookup !== undefined && typeof lookup !== 'function') {
    throw new TypeError(
      `${path}lookup must be a function (hostname, options, callback), got ${describe(lookup)}`,
    );
  }
  return Object.freeze({
    connect: duration(`${path}timeouts.connect`, t.connect, 10_000, true),
    headers: duration(`${path}timeouts.headers`, t.headers, 60_000, true),
    body: duration(`${path}timeouts.body`, t.body, 300_000, true),
    connections,
    idle,
    margin,
    max,
    allowH2,
    tls,
    lookup: lookup as LookupFunction | undefined,
    ssrf: resolveSsrfOptions(options.ssrf, `${path}ssrf`),
  });
}

/** Splits `options` into the transport's fields and the rest (the core's). */
export function splitOptions(
  options: unknown,
  path: string,
  extra: readonly string[] = [],
): { transport: Record<string, unknown>; rest: Record<string, unknown> } {
  if (options === undefined) return { transport: {}, rest: {} };
  const all = checkObject(path, options, [...TRANSPORT_KEYS, ...extra, ...CORE_KEYS]);
  const transport: Record<string, unknown> = {};
  const rest: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(all)) {
    if (value === undefined) continue;
    if (TRANSPORT_KEYS.includes(key) || extra.includes(key)) transport[key] = value;
    else rest[key] = value;
  }
  return { transport, rest };
}

/** The core client options (createFetch's, without `fetch`). */
export const CORE_KEYS: readonly string[] = CLIENT_KEYS;
