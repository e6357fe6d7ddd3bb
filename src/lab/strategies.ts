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
 * - `staunch`: the library's defaults (its backoff, retry budget, circuit
 *   breaker and rate limiter, as `defaults.ts` reads them), honouring pacing.
 *
 * Every strategy gets the scenario's attempt cap and deadline.
 */
import type { PolicyOptions } from '../policy/policies.js';
import { type Backoff, constantBackoff, exponentialBackoff } from '../retry/backoff.js';
import { describeBackoff, staunchDefaults } from './defaults.js';
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

/** The plain loops' backoffs, with the library's own base and cap. */
const LOOPS: Readonly<Record<Base, () => Backoff>> = {
  fixed: () => constantBackoff(1000),
  exponential: () => exponentialBackoff({ jitter: 'none' }),
  'full-jitter': () => exponentialBackoff({ jitter: 'full' }),
  decorrelated: () => exponentialBackoff({ jitter: 'decorrelated' }),
};

/** The configuration of strategy `name`. */
export function strategyConfig(name: StrategyName): StrategyConfig {
  if (name === 'staunch') {
    return {
      name,
      description: `defaults: ${staunchDefaults()
        .map((d) => d.text)
        .join('; ')}`,
      backoff: undefined,
      policies: Object.freeze({}),
      pacing: true,
    };
  }
  const ra = name.endsWith('+ra');
  const backoff = LOOPS[(ra ? name.slice(0, -3) : name) as Base]();
  return {
    name,
    description: `${describeBackoff(backoff)}; ${ra ? 'honours Retry-After' : 'ignores Retry-After'}; policies off`,
    backoff,
    policies: OFF,
    pacing: ra,
  };
}

/** Whether `name` is one of the plain loops (everything but staunch). */
export function isLoop(name: string): name is LoopName {
  return name !== 'staunch';
}
