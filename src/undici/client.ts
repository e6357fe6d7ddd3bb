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
export type UndiciRuntime = Runtime;

/**
 * Resolves the core options once, checking their keys (`label` names the
 * options object in messages) and publishing the events on diagnostics channels.
 */
export function resolveUndiciRuntime(options: unknown, label: string): UndiciRuntime {
  const o = (
    options === undefined ? {} : checkObject(label, options, CLIENT_KEYS)
  ) as ClientOptions;
  return resolveRuntime(o, (on) => withChannels(on, true));
}
