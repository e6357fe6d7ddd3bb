/**
 * The strategies are staunch configurations, not re-implementations: the
 * lab measures the library's own executor, backoff and policies.
 *
 * - `fixed`, `exponential`, `full-jitter`, `decorrelated`: a plain retry loop
 *   with that backoff, so budget, breaker and rate limiter are off (what the
 *   source documents compare).
 * - `staunch`: the library's defaults: full-jitter backoff, retry budget,
 *   circuit breaker and the adaptive rate limiter.
 *
 * Every strategy gets the scenario's attempt cap and deadline.
 */
import type { PolicyOptions } from '../policy/policies.js';
import { type Backoff, constantBackoff, exponentialBackoff } from '../retry/backoff.js';
import type { StrategyName } from './options.js';

/** What a strategy sets: its backoff (absent = staunch's default) and its policies. */
export interface StrategyConfig {
  readonly name: StrategyName;
  /** One line for the report. */
  readonly description: string;
  readonly backoff: Backoff | undefined;
  readonly policies: Readonly<PolicyOptions>;
}

const OFF: Readonly<PolicyOptions> = Object.freeze({
  breaker: false,
  budget: false,
  rateLimit: false,
});

/** The configuration of strategy `name`. */
export function strategyConfig(name: StrategyName): StrategyConfig {
  switch (name) {
    case 'fixed':
      return {
        name,
        description: 'constantBackoff(1000); no budget, breaker or rate limiter',
        backoff: constantBackoff(1000),
        policies: OFF,
      };
    case 'exponential':
      return {
        name,
        description: "exponentialBackoff({ jitter: 'none' }) (250 ms × 2ⁿ, cap 20 s); policies off",
        backoff: exponentialBackoff({ jitter: 'none' }),
        policies: OFF,
      };
    case 'full-jitter':
      return {
        name,
        description: "exponentialBackoff({ jitter: 'full' }) (U(0, 250 ms × 2ⁿ)); policies off",
        backoff: exponentialBackoff({ jitter: 'full' }),
        policies: OFF,
      };
    case 'decorrelated':
      return {
        name,
        description:
          "exponentialBackoff({ jitter: 'decorrelated' }) (U(250, 3 × prev)); policies off",
        backoff: exponentialBackoff({ jitter: 'decorrelated' }),
        policies: OFF,
      };
    case 'staunch':
      return {
        name,
        description: 'defaults: full jitter, retry budget, circuit breaker, adaptive rate limiter',
        backoff: undefined,
        policies: Object.freeze({}),
      };
  }
}
