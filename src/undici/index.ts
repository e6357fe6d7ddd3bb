/**
 * staunch/undici: the Node transport. `createAgent` (an undici dispatcher
 * with per-phase timeouts, a bounded pool, opt-in HTTP/2, the opt-in SSRF
 * guard and the retry interceptor composed in), `retryInterceptor` (the
 * staunch executor for `Dispatcher.compose`) and `createFetch` (a fetch
 * bound to such a transport). See docs/undici.md.
 */

export type { AgentOptions } from './agent.js';
export { createAgent } from './agent.js';
export { CHANNELS } from './channels.js';
export type { ClientOptions } from './client.js';
export type { UndiciFetchOptions, UndiciStaunchFetch } from './fetch.js';
export { createFetch } from './fetch.js';
export type { RetryInterceptorOptions } from './interceptor.js';
export { retryInterceptor } from './interceptor.js';
export type {
  KeepAliveOptions,
  PhaseTimeouts,
  StaunchDispatchFields,
  StaunchDispatchOptions,
  TlsOptions,
  TransportOptions,
} from './options.js';
export type { SsrfOptions } from './ssrf.js';
