/**
 * The core `Runtime` for the retry interceptor and the agent: the same
 * resolver, policies and executor as the fetch adapter (src/client.ts), so there is one
 * implementation of the retry rules; its events are also published on the
 * `staunch:*` diagnostics channels.
 */
import {
  CLIENT_KEYS,
  type ClientOptions,
  checkListeners,
  type Runtime,
  resolveRuntime,
} from '../client.js';
import { checkObject } from '../internal/validate.js';
import { withChannels } from './channels.js';

export type { ClientOptions, Runtime };
export { checkListeners };

/** The runtime of the undici adapters. */
export interface UndiciRuntime extends Runtime {
  /**
   * Bytes of a one-shot request body (kept-body.ts) kept to send it again:
   * `createAgent`'s `bodyReplayLimit`; 0 for the interceptor.
   */
  readonly bodyReplayLimit: number;
  /** No `pacing` reader of the caller's: a success's headers may be read raw (call.ts). */
  readonly rawPacing: boolean;
}

/**
 * Resolves the core options once, checking their keys (`label` names the
 * options object in messages) and publishing the events on diagnostics channels.
 */
export function resolveUndiciRuntime(options: unknown, label: string): UndiciRuntime {
  const o = (
    options === undefined ? {} : checkObject(label, options, CLIENT_KEYS)
  ) as ClientOptions;
  const runtime = resolveRuntime(o, (on) => withChannels(on, true));
  return Object.freeze({ ...runtime, bodyReplayLimit: 0, rawPacing: o.pacing === undefined });
}
