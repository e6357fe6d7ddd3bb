/**
 * staunch: resilient outbound HTTP. The core entry has no runtime dependency
 * and imports no `node:` module.
 */

export type { DeadlineScope, StaunchErrorCode, StaunchErrorOptions } from './errors.js';
export {
  CircuitOpenError,
  DeadlineExceededError,
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
  RequestEndEvent,
  RequestEvent,
  RetryEvent,
  RetryReason,
  StaunchListeners,
  StoreStatusEvent,
  WaitEvent,
  WaitReason,
} from './events.js';
export type { Exchange, ExecutorOptions, LogicalRequest } from './executor.js';
export { Executor } from './executor.js';
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
export type { IdempotencyOptions, RetryOptions, TimeoutOptions } from './options.js';
export { DEFAULT_METHODS, DEFAULT_STATUSES } from './options.js';
export type {
  BreakerAdmission,
  BreakerOptions,
  BreakerOutcome,
  BreakerStateChange,
  BreakerTicket,
  CircuitState,
  ResolvedBreakerOptions,
} from './policy/breaker.js';
export { breakerDefaults, CircuitBreaker, resolveBreakerOptions } from './policy/breaker.js';
export { breakerAdmit, breakerRecord } from './policy/breaker-ops.js';
export type { BudgetOptions, ResolvedBudgetOptions } from './policy/budget.js';
export {
  budgetDefaults,
  budgetDeposit,
  budgetWithdraw,
  RetryBudget,
  resolveBudgetOptions,
} from './policy/budget.js';
export type {
  ConcurrencyDecision,
  ConcurrencyOptions,
  ResolvedConcurrencyOptions,
} from './policy/concurrency.js';
export { ConcurrencyLimiter, resolveConcurrencyOptions } from './policy/concurrency.js';
export type { PolicyKey, PolicyOptions, PolicyRequest } from './policy/policies.js';
export { originKey } from './policy/policies.js';
export type {
  RateLimitDecision,
  RateLimitHint,
  RateLimitOptions,
  ResolvedRateLimitOptions,
} from './policy/rate-limiter.js';
export { RateLimiter, rateLimitDefaults, resolveRateLimitOptions } from './policy/rate-limiter.js';
export { rateAcquire, rateFeedback, rateRefund } from './policy/rate-ops.js';
export type { ReplayRemoved, ReplayRequest } from './replay.js';
export type { Backoff, ExponentialBackoffOptions, Jitter } from './retry/backoff.js';
export { constantBackoff, exponentialBackoff } from './retry/backoff.js';
export type { ErrorKind, RetryScope } from './retry/classify.js';
export { classifyError, classifyStatus, errorCode } from './retry/classify.js';
export type { HeaderSource, PacingSource, ServerPacing } from './retry/server-delay.js';
export {
  MAX_DELAY,
  parseHttpDate,
  parseRetryAfter,
  parseServerDelay,
  readServerPacing,
} from './retry/server-delay.js';
export type { MemoryStore } from './store/memory.js';
export { memoryStore } from './store/memory.js';
export type { Json, StateStore, StoreOperation, StoreStatus, StoreUpdate } from './store/store.js';
