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
 *   It does not hedge (hedging is opt-in): the baseline of the hedging runs.
 * - `staunch+hedge`: the same defaults with `hedge: {}` (an adaptive delay,
 *   hedges paid from the retry budget).
 * - `hedge-fixed`: a naive hedge, as a hand-written loop does it: the default
 *   backoff, policies off (so no budget pays for its hedges), one hedge after
 *   a fixed delay (the lab's `hedgeDelay`) whatever the upstream does.
 *
 * Every strategy gets the scenario's attempt cap and deadline.
 */
import type { HedgeOptions } from '../options.js';
import type { PolicyOptions } from '../policy/policies.js';
import { type Backoff, constantBackoff, exponentialBackoff } from '../retry/backoff.js';
import { describeBackoff, staunchDefaults } from './defaults.js';

/** The plain retry loops: each backoff alone, and the same loop honouring `Retry-After` (`+ra`). */
export type LoopName =
  | 'fixed'
  | 'fixed+ra'
  | 'exponential'
  | 'exponential+ra'
  | 'full-jitter'
  | 'full-jitter+ra'
  | 'decorrelated'
  | 'decorrelated+ra';
/** The hedging strategies: a naive hedge at a fixed delay, and staunch's defaults with `hedge: {}`. */
export type HedgeStrategyName = 'hedge-fixed' | 'staunch+hedge';
/** The strategies the lab compares: the plain loops, staunch's defaults, and the hedging ones. */
export type StrategyName = LoopName | 'staunch' | HedgeStrategyName;
/** The plain loops, in the order the table shows them. */
export const LOOP_NAMES: readonly LoopName[] = Object.freeze([
  'fixed',
  'fixed+ra',
  'exponential',
  'exponential+ra',
  'full-jitter',
  'full-jitter+ra',
  'decorrelated',
  'decorrelated+ra',
]);
/** The storm runs' strategies: the plain loops and staunch, in the order the table shows them. */
export const STORM_STRATEGIES: readonly StrategyName[] = Object.freeze([...LOOP_NAMES, 'staunch']);
/** The hedging runs' strategies: no hedge (staunch's defaults), the naive hedge, staunch hedging. */
export const HEDGE_STRATEGIES: readonly StrategyName[] = Object.freeze([
  'staunch',
  'hedge-fixed',
  'staunch+hedge',
]);
/** Every strategy, in the order the table shows them. */
export const STRATEGIES: readonly StrategyName[] = Object.freeze([
  ...STORM_STRATEGIES,
  'hedge-fixed',
  'staunch+hedge',
]);
/** The strategies of a run against an upstream that sends no pacing: the `+ra` loops would equal the pure ones. */
export const UNPACED_STRATEGIES: readonly StrategyName[] = Object.freeze(
  STORM_STRATEGIES.filter((name) => !name.endsWith('+ra')),
);
/** What a strategy sets: its backoff (absent = staunch's default), its policies, whether it sees pacing. */
export interface StrategyConfig {
  readonly name: StrategyName;
  /** One line for the report. */
  readonly description: string;
  readonly backoff: Backoff | undefined;
  readonly policies: Readonly<PolicyOptions>;
  /** Whether the executor sees the server's pacing headers (false: the lab strips them). */
  readonly pacing: boolean;
  /** The `hedge` option it sets, as a user writes it (absent: no hedging). */
  readonly hedge?: Readonly<HedgeOptions> | undefined;
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

/**
 * The configuration of strategy `name`; `hedgeDelay` is `hedge-fixed`'s
 * delay, ms (the lab's `hedgeDelay` option: no other strategy reads it).
 */
export function strategyConfig(name: StrategyName, hedgeDelay?: number): StrategyConfig {
  if (name === 'staunch' || name === 'staunch+hedge') {
    const defaults = staunchDefaults()
      .map((d) => d.text)
      .join('; ');
    const hedge = name === 'staunch+hedge';
    return {
      name,
      description: hedge
        ? `defaults and hedge: {} (adaptive delay, budgeted); ${defaults}`
        : `defaults: ${defaults}`,
      backoff: undefined,
      policies: Object.freeze({}),
      pacing: true,
      ...(hedge && { hedge: Object.freeze({}) }),
    };
  }
  if (name === 'hedge-fixed') {
    if (hedgeDelay === undefined) throw new Error('lab: hedge-fixed needs its hedgeDelay');
    return {
      name,
      description: `one hedge after a fixed ${hedgeDelay} ms; default backoff; policies off (no budget)`,
      backoff: undefined,
      policies: OFF,
      pacing: false,
      hedge: Object.freeze({ delay: hedgeDelay }),
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

/** Whether `name` is one of the plain retry loops (not staunch, not a hedging strategy). */
export function isLoop(name: string): name is LoopName {
  return (LOOP_NAMES as readonly string[]).includes(name);
}
