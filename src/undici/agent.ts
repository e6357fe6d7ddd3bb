/**
 * `createAgent`: an undici `Agent` with staunch's transport defaults
 * (per-phase timeouts, a bounded pool, keep-alive below the server's hint,
 * opt-in HTTP/2, TLS options, the opt-in SSRF guard) and the retry
 * interceptor composed in.
 */

import { lookup as dnsLookup } from 'node:dns';
import { Agent, buildConnector, type Dispatcher } from 'undici';
import { type ClientOptions, resolveClient } from './client.js';
import { retryInterceptorFor } from './interceptor.js';
import {
  type ResolvedTransport,
  resolveTransport,
  splitOptions,
  type TransportOptions,
} from './options.js';
import { guardConnector, guardLookup } from './ssrf.js';

/** Options of `createAgent`: the transport's and the core client's. */
export interface AgentOptions extends TransportOptions, ClientOptions {}

/**
 * The undici `Agent` options for resolved transport options. Every default
 * is staunch's, stated here rather than left to undici's (which differ:
 * headers 300 s, an unbounded pool, keep-alive hints trusted up to 10 min).
 */
export function agentOptions(t: ResolvedTransport): Agent.Options {
  const lookup = t.ssrf === undefined ? t.lookup : guardLookup(t.ssrf, t.lookup ?? dnsLookup);
  const connector = buildConnector({
    ...t.tls,
    timeout: t.connect,
    allowH2: t.allowH2,
    ...(lookup !== undefined && { lookup }),
  });
  return {
    connect: t.ssrf === undefined ? connector : guardConnector(t.ssrf, connector),
    connectTimeout: t.connect,
    headersTimeout: t.headers,
    bodyTimeout: t.body,
    connections: t.connections,
    keepAliveTimeout: t.idle,
    keepAliveTimeoutThreshold: t.margin,
    keepAliveMaxTimeout: t.max,
    allowH2: t.allowH2,
  };
}

/**
 * An undici dispatcher with staunch's transport (per-phase timeouts, a
 * bounded keep-alive pool, opt-in HTTP/2 and SSRF guard) and the staunch
 * retry interceptor composed in. Use it with `undici.request`,
 * `undici.fetch`, `setGlobalDispatcher`, or any SDK that takes a dispatcher.
 * Close it with `await agent.close()`.
 *
 * @example
 * const agent = createAgent({ timeouts: { connect: 5_000 }, retry: { attempts: 4 } });
 * const { statusCode, body } = await request('https://api.example.com/v1/items', { dispatcher: agent });
 * @see docs/undici.md
 */
export function createAgent(options: AgentOptions = {}): Dispatcher {
  const { transport, rest } = splitOptions(options, 'createAgent options');
  const resolved = resolveTransport(transport);
  const interceptor = retryInterceptorFor(resolveClient(rest, 'createAgent options'));
  return new Agent(agentOptions(resolved)).compose(interceptor);
}
