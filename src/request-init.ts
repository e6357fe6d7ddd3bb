/**
 * `staunch/request-init`: staunch's per-request fields on the global
 * `RequestInit`, for projects that call a `createFetch` fetch through a
 * wrapper whose option type extends `RequestInit` (ky's `Options`, ofetch's
 * `FetchOptions`). Those types refuse `staunch: { … }` otherwise, though the
 * wrappers pass it on to the fetch they wrap. Opt in once per project, with
 * a type-only import of this entry (an empty `import type {}` list), and
 * then, through ky:
 *
 * @example
 * await api.post('orders', { json: order, staunch: { retry: { attempts: 5 } } });
 *
 * Types only: the module has no runtime code. Every `RequestInit` in the
 * project then accepts the fields, including those of a fetch that is not
 * staunch's, which ignores them.
 */
import type { StaunchRequestOptions } from './request-options.js';

declare global {
  interface RequestInit {
    /** staunch's per-request overrides, read by a `createFetch` fetch. @default the client's */
    staunch?: StaunchRequestOptions | undefined;
    /** Shorthand for `staunch.idempotencyKey`. @default none */
    idempotencyKey?: string | undefined;
  }
}

export type { StaunchRequestOptions } from './request-options.js';
