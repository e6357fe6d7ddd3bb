/**
 * `retryInterceptor`: the executor as an undici interceptor, for
 * `Dispatcher.compose`. Each dispatch becomes one logical request; each
 * attempt is a dispatch to the next dispatcher in the chain. The same
 * `Executor` as the fetch adapter decides (retry rules, backoff, server
 * pacing, deadlines, policies, events): this file merges the options and
 * wraps the caller's handler (first.ts); the handlers own the attempts.
 */
import type { Dispatcher } from 'undici';
import { passesThrough } from './call.js';
import { type ClientOptions, resolveUndiciRuntime, type UndiciRuntime } from './client.js';
import { FirstAttempt } from './first.js';
import { currentApi } from './legacy.js';
import { watchSockets } from './stale.js';

/** Options of `retryInterceptor`: the core options of `createFetch`, without `fetch`. */
export type RetryInterceptorOptions = ClientOptions;

/**
 * The staunch executor as an undici interceptor: `undici.request`,
 * `undici.fetch` and anything that takes a dispatcher get staunch's retries,
 * deadlines, policies and events. Options are validated once, here.
 *
 * Per request, `staunch: { retry, timeout, idempotencyKey }` on the dispatch
 * options overrides the interceptor's. `CONNECT` and upgrade requests pass
 * through untouched.
 *
 * @example
 * const agent = new Agent().compose(retryInterceptor({ retry: { attempts: 4 } }));
 * const { statusCode, body } = await request(url, { dispatcher: agent });
 * @see docs/undici.md
 */
export function retryInterceptor(
  options: RetryInterceptorOptions = {},
): Dispatcher.DispatcherComposeInterceptor {
  return retryInterceptorFor(resolveUndiciRuntime(options, 'retryInterceptor options'));
}

/** @internal The interceptor for an already resolved client. */
export function retryInterceptorFor(
  client: UndiciRuntime,
): Dispatcher.DispatcherComposeInterceptor {
  watchSockets();
  return (dispatch) =>
    function staunchRetry(opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler) {
      if (passesThrough(opts)) return dispatch(opts, handler);
      new FirstAttempt(client, currentApi(handler)).run(dispatch, opts, true);
      return true;
    };
}
