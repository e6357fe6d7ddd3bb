/**
 * The strategies are staunch configurations, not re-implementations: the
 * lab measures the library's own executor, backoff and policies.
 *
 * - `fixed`, `exponential`, `full-jitter`, `decorrelated`: a plain retry loop
 *   with that backoff and nothing else: budget, breaker and rate limiter
 *   off, and the server's pacing headers (`Retry-After`, `RateLimit-*`)
 *   stripped from what its executor sees, so its own backoff is what runs
 *   (the executor would otherwise let the server's hint replace it).
 * - `<loop>+ra`: the same loop honouring `Retry-After` (and the other
 *   pacing headers) as the executor does: a plain loop too, policies off.
 * - `staunch`: the library's defaults: decorrelated-jitter backoff, retry budget,
 *   circuit breaker and the adaptive rate limiter, honouring pacing.
 *
 * Every strategy gets the scenario's attempt cap and deadline.
 */
import type { PolicyOptions } from '../policy/policies.js';
import { type Backoff, constantBackoff, exponentialBackoff } from '../retry/backoff.js';
import type { LoopName, StrategyName } from './options.js';

/** What a strategy sets: its backoff (absent = staunch's default), its policies, whether it sees pacing. */
export interface StrategyConfig {
  readonly name: StrategyName;
  /** One line for the report. */
  readonly description: string;
  readonly backoff: Backoff | undefined;
  readonly policies: Readonly<PolicyOptions>;
  /** Whether the executor sees the server's pacing headers (false: the lab strips them). */
  readonly pacing: boolean;
}

const OFF: Readonly<PolicyOptions> = Object.freeze({
  breaker: false,
  budget: false,
  rateLimit: false,
});

type Base = 'fixed' | 'exponential' | 'full-jitter' | 'decorrelated';

const LOOPS: Readonly<Record<Base, { description: string; backoff: () => Backoff }>> = {
  fixed: { description: 'constantBackoff(1000)', backoff: () => constantBackoff(1000) },
  exponential: {
    description: "exponentialBackoff({ jitter: 'none' }) (250 ms × 2ⁿ, cap 20 s)",
    backoff: () => exponentialBackoff({ jitter: 'none' }),
  },
  'full-jitter': {
    description: "exponentialBackoff({ jitter: 'full' }) (U(0, 250 ms × 2ⁿ))",
    backoff: () => exponentialBackoff({ jitter: 'full' }),
  },
  decorrelated: {
    description: "exponentialBackoff({ jitter: 'decorrelated' }) (U(250, 3 × prev))",
    backoff: () => exponentialBackoff({ jitter: 'decorrelated' }),
  },
};

/** The configuration of strategy `name`. */
export function strategyConfig(name: StrategyName): StrategyConfig {
  if (name === 'staunch') {
    return {
      name,
      description:
        'defaults: decorrelated jitter, retry budget, circuit breaker, adaptive rate limiter',
      backoff: undefined,
      policies: Object.freeze({}),
      pacing: true,
    };
  }
  const ra = name.endsWith('+ra');
  const loop = LOOPS[(ra ? name.slice(0, -3) : name) as Base];
  return {
    name,
    description: `${loop.description}; ${ra ? 'honours Retry-After' : 'ignores Retry-After'}; policies off`,
    backoff: loop.backoff(),
    policies: OFF,
    pacing: ra,
  };
}

/** Whether `name` is one of the plain loops (everything but staunch). */
export function isLoop(name: string): name is LoopName {
  return name !== 'staunch';
}
