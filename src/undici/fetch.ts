/**
 * `createFetch` of `staunch/undici`: the core fetch adapter over npm undici's
 * fetch, on an agent with staunch's transport.
 *
 * Composition (never two retry layers): the core `createFetch` retries; its
 * transport is `undici.fetch` on an agent WITHOUT the retry interceptor (it
 * carries only the stale-connection marker). Not the other way round
 * (undici's fetch over an agent with the interceptor), because undici's
 * fetch hands the dispatcher every request body as a one-shot async
 * iterable, so an interceptor could never resend a PUT or a keyed POST; the
 * fetch adapter keeps bodies replayable, reads `Request` inputs, encodes
 * FormData once, and takes the per-request `staunch` field. Redirects are followed by staunch (redirect.ts).
 */
import { Agent, type Dispatcher, fetch as undiciFetch } from 'undici';
import { SsrfBlockedError } from '../errors.js';
import { createFetch as coreCreateFetch, type FetchLike, type StaunchFetch } from '../fetch.js';
import { checkNumber } from '../internal/validate.js';
import { agentOptions } from './agent.js';
import { withChannels } from './channels.js';
import { type ClientOptions, checkListeners } from './client.js';
import { surface } from './interceptor.js';
import { resolveTransport, splitOptions, type TransportOptions } from './options.js';
import { followRedirects } from './redirect.js';
import { staleMarker } from './stale.js';

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

/** An SSRF refusal comes out of undici's fetch as the cause of a `TypeError`: take it out. */
function unwrapSsrf(error: unknown): never {
  const cause = (error as { cause?: unknown } | null)?.cause;
  throw cause instanceof SsrfBlockedError ? cause : error;
}

/**
 * A fetch bound to an undici agent with staunch's transport: per-phase
 * timeouts, a bounded keep-alive pool, opt-in HTTP/2, the opt-in SSRF guard,
 * redirects followed safely, and staunch's retries, deadlines and policies
 * (the core options, as `createFetch` from `staunch` takes them).
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
  const dispatcher = new Agent(agentOptions(resolved)).compose(staleMarker());
  const hop = ((url: string, init: RequestInit) =>
    (undiciFetch as unknown as FetchLike)(url, {
      ...init,
      dispatcher,
    } as unknown as RequestInit).catch(unwrapSsrf)) as FetchLike;
  const core = coreCreateFetch({
    ...(rest as ClientOptions),
    on,
    fetch: followRedirects(hop, max, resolved.ssrf !== undefined),
  });
  const fetch: StaunchFetch = (input, init) => core(input, init).catch(rethrow);
  return Object.assign(fetch, { dispatcher });
}

function rethrow(error: unknown): never {
  throw surface(error);
}
