/**
 * `createFetch` of `staunch/undici`: the core fetch adapter over a fetch
 * built on an undici `Agent`'s `dispatch` (dispatch-fetch.ts), with
 * staunch's transport.
 *
 * Composition (never two retry layers): the core `createFetch` retries; its
 * transport sends one hop on a plain `Agent` (no retry interceptor).
 * The fetch adapter keeps bodies replayable, reads `Request` inputs, encodes
 * FormData once, and takes the per-request `staunch` field; redirects are
 * followed by staunch (redirect.ts); the stale keep-alive race is marked by
 * the hop's handler (response.ts). Not `undici.fetch`: it runs the whole
 * Fetch standard per call, and cost more than Node's own fetch saves.
 */
import { Agent, type Dispatcher } from 'undici';
import { createFetch as coreCreateFetch, type StaunchFetch } from '../fetch.js';
import { markSteadyDeadlines } from '../internal/deadlines.js';
import { checkNumber } from '../internal/validate.js';
import { agentOptions } from './agent.js';
import { surface } from './call.js';
import { withChannels } from './channels.js';
import { type ClientOptions, checkListeners } from './client.js';
import { dispatchFetch } from './dispatch-fetch.js';
import { resolveTransport, splitOptions, type TransportOptions } from './options.js';
import { followRedirects } from './redirect.js';
import { watchSockets } from './stale.js';

/** Options of `createFetch` from `staunch/undici`. */
export interface UndiciFetchOptions extends TransportOptions, ClientOptions {
  /**
   * Redirects followed per attempt before failing with
   * `ERR_TOO_MANY_REDIRECTS` (the fetch standard's limit). `0` follows none
   * and fails on the first.
   * @default 20
   */
  maxRedirects?: number;
}

/** The fetch `createFetch` returns, with the dispatcher it sends on (close it when done). */
export type UndiciStaunchFetch = StaunchFetch & {
  /** The undici dispatcher of this fetch: `await fetch.dispatcher.close()` at shutdown. */
  readonly dispatcher: Dispatcher;
};

/**
 * A fetch bound to an undici agent with staunch's transport: per-phase
 * timeouts, a bounded keep-alive pool, opt-in HTTP/2, the opt-in SSRF guard,
 * redirects followed safely, and staunch's retries, deadlines and policies
 * (the core options, as `createFetch` from `staunch` takes them). It returns
 * standard `Response` objects (the global class).
 *
 * @example
 * const fetch = createFetch({
 *   timeouts: { connect: 10_000, headers: 60_000, body: 300_000 },
 *   connections: 50,
 *   ssrf: { allow: ['10.0.0.0/8'] },
 *   retry: { attempts: 4 },
 * });
 * const res = await fetch('https://api.example.com/v1/items');
 * @see docs/undici.md
 */
export function createFetch(options: UndiciFetchOptions = {}): UndiciStaunchFetch {
  const { transport, rest } = splitOptions(options, 'createFetch options', ['maxRedirects']);
  const { maxRedirects, ...transportOnly } = transport;
  const max =
    maxRedirects === undefined
      ? 20
      : checkNumber('maxRedirects', maxRedirects, { min: 0, max: 100, integer: true });
  const resolved = resolveTransport(transportOnly);
  const on = withChannels(checkListeners(rest.on), false);
  const dispatcher = new Agent(agentOptions(resolved));
  watchSockets();
  const core = coreCreateFetch({
    ...(rest as ClientOptions),
    on,
    // Its attempts come and go beside undici's own timers: their deadlines go on the steady list.
    fetch: markSteadyDeadlines(
      followRedirects(dispatchFetch(dispatcher), max, resolved.ssrf !== undefined),
    ),
  });
  const fetch: StaunchFetch = (input, init) => core(input, init).catch(rethrow);
  return Object.assign(fetch, { dispatcher });
}

function rethrow(error: unknown): never {
  throw surface(error);
}
