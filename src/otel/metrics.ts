/**
 * The metrics of `staunch/otel`, all fed by staunch's events (so they work
 * without the span wrappers): attempt and request durations, retries and
 * give-ups by reason, time waited by reason, and two gauges per policy key,
 * the breaker's state and the retry budget's balance.
 */
import type { Meter, ObservableResult, Attributes as OtelAttributes } from '@opentelemetry/api';
import type { CircuitState } from '../policy/breaker/ops.js';
import {
  BUDGET_KEY_PREFIX,
  BUDGET_MEMORY_MS,
  type BudgetArgs,
  budgetDeposit,
  type ResolvedBudgetOptions,
} from '../policy/budget/budget.js';
import type { PolicyKey } from '../policy/policies.js';
import type { StateStore } from '../store/store.js';
import type { Attributes } from './attributes.js';

/** Seconds, the unit semconv uses for durations. */
const S = 1000;

// semconv's advice for http.client.request.duration, in seconds.
const DURATION_BUCKETS = [
  0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10,
];

const CIRCUIT_STATES: readonly CircuitState[] = ['closed', 'half-open', 'open'];

/** Where the budget gauge reads the balance: the client's store and budget options. */
export interface BudgetSource {
  readonly store: StateStore;
  readonly options: ResolvedBudgetOptions;
  readonly key: PolicyKey;
}

export class StaunchMetrics {
  readonly #attempt;
  readonly #request;
  readonly #retries;
  readonly #giveUps;
  readonly #waited;
  /** The last known state of each key's circuit. */
  readonly #circuits = new Map<string, CircuitState>();
  /** Policy keys seen in requests, for the budget gauge. */
  readonly #keys = new Set<string>();
  readonly #budget: BudgetSource | undefined;

  constructor(meter: Meter, budget: BudgetSource | undefined) {
    this.#budget = budget;
    this.#attempt = meter.createHistogram('http.client.request.duration', {
      description: 'Duration of one HTTP attempt, until its response headers or its failure.',
      unit: 's',
      advice: { explicitBucketBoundaries: DURATION_BUCKETS },
    });
    this.#request = meter.createHistogram('staunch.request.duration', {
      description: 'Duration of one logical request, every attempt and wait included.',
      unit: 's',
      advice: { explicitBucketBoundaries: DURATION_BUCKETS },
    });
    this.#retries = meter.createCounter('staunch.retries', {
      description: 'Retries scheduled, by what made the attempt worth retrying.',
      unit: '{retry}',
    });
    this.#giveUps = meter.createCounter('staunch.give_ups', {
      description: 'Retryable failures not retried, by why not.',
      unit: '{request}',
    });
    this.#waited = meter.createHistogram('staunch.wait.duration', {
      description: 'Time spent waiting before an attempt, by reason.',
      unit: 's',
    });
    meter
      .createObservableGauge('staunch.breaker.state', {
        description: 'The circuit of each policy key: 1 for its current state, 0 for the others.',
        unit: '1',
      })
      .addCallback((result) => this.#observeCircuits(result));
    if (budget !== undefined) {
      meter
        .createObservableGauge('staunch.budget.balance', {
          description: 'Retries of failures the retry budget of each policy key allows now.',
          unit: '{retry}',
        })
        .addCallback((result) => this.#observeBudget(result, budget));
    }
  }

  attempt(attributes: Attributes, ms: number): void {
    this.#attempt.record(ms / S, attributes);
  }

  request(attributes: Attributes, ms: number): void {
    this.#request.record(ms / S, attributes);
  }

  retry(attributes: Attributes): void {
    this.#retries.add(1, attributes);
  }

  giveUp(attributes: Attributes): void {
    this.#giveUps.add(1, attributes);
  }

  wait(attributes: Attributes, ms: number): void {
    this.#waited.record(ms / S, attributes);
  }

  circuit(key: string, state: CircuitState): void {
    this.#circuits.set(key, state);
  }

  /** Remembers the policy key of a request, for the budget gauge. */
  seen(method: string, url: string): void {
    if (this.#budget === undefined) return;
    try {
      this.#keys.add(this.#budget.key({ method, url }));
    } catch {
      // A throwing key function fails the request itself; the gauge just skips it.
    }
  }

  #observeCircuits(result: ObservableResult<OtelAttributes>): void {
    for (const [key, current] of this.#circuits) {
      for (const state of CIRCUIT_STATES) {
        result.observe(state === current ? 1 : 0, {
          'staunch.policy.key': key,
          'staunch.breaker.state': state,
        });
      }
    }
  }

  /**
   * Reads each key's balance with the budget's own deposit operation at a
   * ratio of 0: it refills the state to now and adds nothing, so it changes
   * no decision, and every store (the Redis one too) already runs it.
   */
  async #observeBudget(
    result: ObservableResult<OtelAttributes>,
    source: BudgetSource,
  ): Promise<void> {
    const args: BudgetArgs = {
      ratio: 0,
      minPerSecond: source.options.minPerSecond,
      memoryMs: BUDGET_MEMORY_MS,
    };
    for (const key of this.#keys) {
      try {
        const balance = await source.store.run(
          BUDGET_KEY_PREFIX + key,
          budgetDeposit,
          args,
          Date.now(),
        );
        result.observe(balance, { 'staunch.policy.key': key });
      } catch {
        // An unreachable store has no balance to report this time.
      }
    }
  }
}
