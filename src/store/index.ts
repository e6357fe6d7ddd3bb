/**
 * `staunch/store`: the `StateStore` contract and the operations staunch runs
 * on it, for whoever implements a store (docs/policies.md, "Store
 * operations", is the spec each operation must follow; `staunch/redis` is
 * the reference remote implementation). A user who only passes a store to
 * `createFetch` needs nothing from here: `memoryStore` is on the core entry.
 */

export { BREAKER_KEY_PREFIX } from '../policy/breaker/breaker.js';
export type {
  BreakerAdmitArgs,
  BreakerAdmitResult,
  BreakerChange,
  BreakerConfig,
  BreakerRecordArgs,
  BreakerRecordResult,
  BreakerState,
} from '../policy/breaker/ops.js';
export { BREAKER_BUCKETS, breakerAdmit, breakerRecord } from '../policy/breaker/ops.js';
export type { BudgetArgs, BudgetState } from '../policy/budget/budget.js';
export { BUDGET_KEY_PREFIX, budgetDeposit, budgetWithdraw } from '../policy/budget/budget.js';
export { RATE_KEY_PREFIX } from '../policy/rate/limiter.js';
export type {
  RateAcquireArgs,
  RateAcquireResult,
  RateConfig,
  RateFeedbackArgs,
  RateFeedbackResult,
  RateRefundArgs,
  RateSignal,
  RateState,
} from '../policy/rate/ops.js';
export { rateAcquire, rateFeedback, rateRefund } from '../policy/rate/ops.js';
export type { MemoryStore, MemoryStoreOptions } from './memory.js';
export { memoryStore } from './memory.js';
export type { Json, StateStore, StoreOperation, StoreStatus, StoreUpdate } from './store.js';
