/**
 * The core client for the retry interceptor: the same resolver, policies and
 * executor as the fetch adapter (src/client.ts), so there is one
 * implementation of the retry rules; its events are also published on the
 * `staunch:*` diagnostics channels.
 */
import {
  CLIENT_KEYS,
  type Client,
  type ClientOptions,
  checkListeners,
  resolveClient as resolveCoreClient,
} from '../client.js';
import { checkObject } from '../internal/validate.js';
import { withChannels } from './channels.js';

export type { Client, ClientOptions };
export { checkListeners };

/** Resolves the core options once; `label` names the options object in messages. */
export function resolveClient(options: unknown, label: string): Client {
  const o = (
    options === undefined ? {} : checkObject(label, options, CLIENT_KEYS)
  ) as ClientOptions;
  return resolveCoreClient(o, (on) => withChannels(on, true));
}
