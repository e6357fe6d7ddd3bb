/**
 * `createAgent`: a `Dispatcher` with staunch's retries in front of an undici
 * `Agent` with staunch's transport defaults (per-phase timeouts, a bounded
 * pool, keep-alive below the server's hint, opt-in HTTP/2, TLS options, the
 * opt-in SSRF guard).
 *
 * A subclass of undici's `Dispatcher` rather than
 * `agent.compose(retryInterceptor)`: its attempts need no mark, and a legacy
 * caller (`undici.request`) gets the raw headers undici read (legacy.ts).
 * Its state is in plain fields, not `#private` ones: `compose` returns a
 * `Proxy` of the dispatcher, and `close`/`destroy` called through it run
 * with the proxy as `this`.
 */

import { lookup as dnsLookup } from 'node:dns';
import type { EventEmitter } from 'node:events';
import { Agent, buildConnector, Dispatcher } from 'undici';
import { checkNumber } from '../internal/validate.js';
import { passesThrough } from './call.js';
import { type ClientOptions, resolveUndiciRuntime, type UndiciRuntime } from './client.js';
import { FirstAttempt } from './first.js';
import { currentApi } from './legacy.js';
import {
  type ResolvedTransport,
  resolveTransport,
  splitOptions,
  type TransportOptions,
} from './options.js';
import { guardConnector, guardLookup } from './ssrf.js';
import { watchSockets } from './stale.js';

/** Options of `createAgent`: the transport's, the core client's, and its own. */
export interface AgentOptions extends TransportOptions, ClientOptions {
  /**
   * Bytes of a one-shot request body kept so that a replayable request can
   * be sent again: undici's `fetch` and Node's global fetch hand a dispatcher
   * every body (a string's too) as an async iterable it can read once. A
   * body that states its length (`content-length`) and is no longer than
   * this is kept as it is sent; a longer one, or one of unknown length, is
   * sent once (its give-up reason is `body-not-replayable`). `0` keeps none.
   * @default 1_048_576
   */
  bodyReplayLimit?: number;
}

/** The default of {@link AgentOptions.bodyReplayLimit}: 1 MiB. */
const BODY_REPLAY_LIMIT = 1024 * 1024;

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

/** The events of undici's `Agent`, re-emitted by the staunch agent once someone listens. */
const AGENT_EVENTS: ReadonlySet<string | symbol> = new Set([
  'connect',
  'disconnect',
  'connectionError',
  'drain',
]);

/** The dispatcher `createAgent` returns. */
class StaunchAgent extends Dispatcher {
  // Not `#private`: read through `compose`'s proxy too (see the module's comment).
  protected readonly agent: Agent;
  protected readonly client: UndiciRuntime;
  protected readonly send: Dispatcher.Dispatch;

  constructor(agent: Agent, client: UndiciRuntime) {
    super();
    this.agent = agent;
    this.client = client;
    this.send = agent.dispatch.bind(agent);
    const forwarded = new Set<string | symbol>();
    const emitter = this as unknown as EventEmitter;
    const source = agent as unknown as EventEmitter;
    emitter.on('newListener', (event: string | symbol) => {
      if (!AGENT_EVENTS.has(event) || forwarded.has(event)) return;
      forwarded.add(event);
      source.on(event, (...args: unknown[]) => emitter.emit(event, ...args));
    });
  }

  override dispatch(
    opts: Dispatcher.DispatchOptions,
    handler: Dispatcher.DispatchHandler,
  ): boolean {
    if (passesThrough(opts)) return this.agent.dispatch(opts, handler);
    new FirstAttempt(this.client, currentApi(handler)).run(this.send, opts, false);
    return true;
  }

  override close(callback: () => void): void;
  override close(): Promise<void>;
  override close(callback?: () => void): Promise<void> | undefined {
    if (callback === undefined) return this.agent.close();
    this.agent.close(callback);
    return undefined;
  }

  override destroy(err: Error | null, callback: () => void): void;
  override destroy(callback: () => void): void;
  override destroy(err: Error | null): Promise<void>;
  override destroy(): Promise<void>;
  override destroy(
    err?: Error | null | (() => void),
    callback?: () => void,
  ): Promise<void> | undefined {
    const agent = this.agent;
    if (typeof err === 'function') {
      agent.destroy(err);
      return undefined;
    }
    if (callback !== undefined) {
      agent.destroy(err ?? null, callback);
      return undefined;
    }
    return err === undefined ? agent.destroy() : agent.destroy(err);
  }
}

/**
 * An undici dispatcher with staunch's transport (per-phase timeouts, a
 * bounded keep-alive pool, opt-in HTTP/2 and SSRF guard) and staunch's
 * retries, deadlines and policies in front of it. Use it with
 * `undici.request`, `undici.fetch`, `setGlobalDispatcher`, or any SDK that
 * takes a dispatcher. Close it with `await agent.close()`.
 *
 * @example
 * const agent = createAgent({ timeouts: { connect: 5_000 }, retry: { attempts: 4 } });
 * const { statusCode, body } = await request('https://api.example.com/v1/items', { dispatcher: agent });
 * @see docs/undici.md
 */
export function createAgent(options: AgentOptions = {}): Dispatcher {
  const { transport, rest } = splitOptions(options, 'createAgent options', ['bodyReplayLimit']);
  const { bodyReplayLimit, ...ours } = transport;
  const resolved = resolveTransport(ours);
  const client: UndiciRuntime = Object.freeze({
    ...resolveUndiciRuntime(rest, 'createAgent options'),
    bodyReplayLimit:
      bodyReplayLimit === undefined
        ? BODY_REPLAY_LIMIT
        : checkNumber('bodyReplayLimit', bodyReplayLimit, { min: 0, integer: true }),
  });
  watchSockets();
  return new StaunchAgent(new Agent(agentOptions(resolved)), client);
}
