/**
 * staunch: resilient outbound HTTP. The core entry has no runtime dependency
 * and imports no `node:` module. It exports what a user calls: `createFetch`,
 * the options' types, errors, events, `memoryStore`, backoff schedules and
 * pacing-header parsers. What a store implementer needs is `staunch/store`;
 * the executor and the policies' classes stay internal.
 */

export type { DeadlineScope, StaunchErrorCode, StaunchErrorOptions } from './errors.js';
export {
  CircuitOpenError,
  DeadlineExceededError,
  IdempotencyKeyMismatchError,
  isStaunchError,
  NetworkError,
  QueueFullError,
  QueueTimeoutError,
  RateLimitedError,
  SsrfBlockedError,
  StaunchError,
} from './errors.js';
export type {
  AttemptEvent,
  AttemptStartEvent,
  BreakerStateChangeEvent,
  GiveUpEvent,
  GiveUpReason,
  OuterRetryEvent,
  RequestEndEvent,
  RequestEvent,
  RetryEvent,
  RetryReason,
  StaunchListeners,
  StoreStatusEvent,
  WaitEvent,
  WaitReason,
} from './events.js';
export type {
  FetchLike,
  StaunchFetch,
  StaunchOptions,
  StaunchRequestInit,
  StaunchRequestOptions,
} from './fetch.js';
export { createFetch } from './fetch.js';
export type { Clock, Random } from './internal/clock.js';
export { systemClock } from './internal/clock.js';
export { redactUrl } from './internal/redact.js';
export type { HedgeOptions, IdempotencyOptions, RetryOptions, TimeoutOptions } from './options.js';
export { DEFAULT_METHODS, DEFAULT_STATUSES } from './options.js';
export type { BreakerOptions, CircuitState } from './policy/breaker/breaker.js';
export type { BudgetOptions } from './policy/budget/budget.js';
export type { ConcurrencyOptions } from './policy/concurrency.js';
export type { PolicyKey, PolicyOptions, PolicyRequest } from './policy/policies.js';
export { originKey } from './policy/policies.js';
export type { RateLimitOptions } from './policy/rate/limiter.js';
export type { ReplayRemoved, ReplayRequest } from './replay.js';
export type { ResumeOptions } from './resume.js';
export { ResumeError } from './resume.js';
export type { Backoff, ExponentialBackoffOptions, Jitter } from './retry/backoff.js';
export { constantBackoff, exponentialBackoff } from './retry/backoff.js';
export type {
  RetryScope,
  StatusClassifier,
  StatusOutcome,
  StatusVerdict,
} from './retry/classify.js';
export type {
  HeaderSource,
  PacingReader,
  PacingSource,
  ServerPacing,
} from './retry/server-delay.js';
export {
  parseHttpDate,
  parseRetryAfter,
  parseServerDelay,
  readServerPacing,
} from './retry/server-delay.js';
export type { MemoryStore, MemoryStoreOptions } from './store/memory.js';
export { memoryStore } from './store/memory.js';
export type { StateStore, StoreStatus } from './store/store.js';
