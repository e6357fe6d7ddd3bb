/**
 * A staunch client's options, resolved once into a `Runtime` (the resolved
 * options and the `Executor` that runs them): the one place where options are
 * validated and the policies built, shared by every adapter (`createFetch`,
 * and `staunch/undici`'s interceptor and agent).
 */
import { emit, type StaunchListeners } from './events.js';
import { Executor } from './executor/index.js';
import { type Clock, type Random, systemClock } from './internal/clock.js';
import { checkObject, describe, keysOf } from './internal/validate.js';
import {
  checkClock,
  checkRandom,
  type HedgeOptions,
  type IdempotencyOptions,
  type ResolvedHedgeOptions,
  type ResolvedIdempotencyOptions,
  type ResolvedRetryOptions,
  type ResolvedTimeoutOptions,
  type RetryOptions,
  resolveHedgeOptions,
  resolveIdempotencyOptions,
  resolveRetryOptions,
  resolveTimeoutOptions,
  type TimeoutOptions,
} from './options.js';
import { createPolicies, type PolicyOptions } from './policy/policies.js';
import type { RequestSettings } from './request-options.js';
import type { StatusClassifier } from './retry/classify.js';
import type { PacingReader } from './retry/server-delay.js';
import { memoryStore } from './store/memory.js';
import type { StateStore } from './store/store.js';

/** The options of a staunch client, whatever its transport. Durations in ms. */
export interface ClientOptions extends PolicyOptions {
  /** Retry policy; a number is the attempts, `false` is one attempt. @default { attempts: 3 } */
  retry?: RetryOptions | number | boolean;
  /** Deadlines; a number is `{ total }`, `false` disables both. @default { attempt: 60_000, total: 300_000 } */
  timeout?: TimeoutOptions | number | false;
  /** Idempotency key header, and whether to add one to POST/PATCH. @default { header: 'Idempotency-Key', auto: false } */
  idempotency?: IdempotencyOptions;
  /**
   * Hedged requests: a replayable request with no response after `delay` is
   * sent again, the first response wins (docs/hedging.md). Off by default.
   * @default false
   */
  hedge?: false | HedgeOptions;
  /** Typed event listeners. @default {} */
  on?: StaunchListeners;
  /** Time source, for tests and the lab's simulator. @default systemClock */
  clock?: Clock;
  /** Random source in [0, 1). @default Math.random */
  random?: Random;
  /**
   * Refines the retry table for responses of 400 or more: who may retry one
   * (`any`, `replayable`, `never`) and a `kind` said on the events. Called
   * with the table's verdict; a hook that throws changes nothing.
   * @default none (the built-in retry table)
   */
  classify?: StatusClassifier;
  /**
   * Reads pacing headers the standard ones do not cover (a provider's own
   * family): `remaining` and `reset` of a spent window hold the key in the
   * rate limiter, `delay` paces a retry when no standard header does. Called
   * for every response a rate limiter learns from.
   * @default none
   */
  pacing?: PacingReader;
}

/** The keys of {@link ClientOptions} (checked against the type: internal/validate.ts `keysOf`). */
export const CLIENT_KEYS: readonly string[] = keysOf<ClientOptions>()([
  'retry',
  'timeout',
  'idempotency',
  'hedge',
  'on',
  'clock',
  'random',
  'breaker',
  'budget',
  'rateLimit',
  'concurrency',
  'store',
  'key',
  'classify',
  'pacing',
  'hold',
]);

const LISTENER_KEYS = keysOf<StaunchListeners>()([
  'attemptStart',
  'attempt',
  'retry',
  'giveUp',
  'wait',
  'end',
  'breakerStateChange',
  'storeDegraded',
  'storeRecovered',
  'outerRetry',
]);

/**
 * @internal What an adapter runs requests with: the client's options,
 * resolved and frozen, and the executor built from them. (Not a client: the
 * adapter that holds it is.)
 */
export interface Runtime {
  readonly executor: Executor;
  readonly retry: ResolvedRetryOptions;
  readonly timeout: ResolvedTimeoutOptions;
  readonly idempotency: ResolvedIdempotencyOptions;
  /** `hedge`, resolved: `undefined`, none. */
  readonly hedge: ResolvedHedgeOptions | undefined;
  readonly random: Random;
  /** The listeners, as decorated. */
  readonly on: StaunchListeners;
  /** What a request without options of its own runs with: one frozen object for all of them. */
  readonly defaults: RequestSettings;
}

/** Checks the listeners object; returns it (or `{}`). */
export function checkListeners(on: unknown): StaunchListeners {
  if (on === undefined) return {};
  const o = checkObject('on', on, LISTENER_KEYS);
  for (const [name, listener] of Object.entries(o)) {
    if (listener !== undefined && typeof listener !== 'function') {
      throw new TypeError(`on.${name} must be a function, got ${describe(listener)}`);
    }
  }
  return { ...(o as StaunchListeners) };
}

/**
 * Validates `options` (already checked for unknown keys by the caller, or
 * here against {@link CLIENT_KEYS} when `label` is given) and builds the
 * executor. `decorate` may wrap the listeners (staunch/undici publishes them
 * on diagnostics channels too).
 */
export function resolveRuntime(
  options: ClientOptions,
  decorate: (on: StaunchListeners) => StaunchListeners = (on) => on,
): Runtime {
  const user = checkListeners(options.on);
  const retry = resolveRetryOptions(options.retry);
  const timeout = resolveTimeoutOptions(options.timeout);
  const idempotency = resolveIdempotencyOptions(options.idempotency);
  const hedge = resolveHedgeOptions(options.hedge);
  const clock = checkClock(options.clock) ?? systemClock;
  const random = checkRandom(options.random) ?? Math.random;
  const store = options.store ?? memoryStore();
  if (typeof (store as Partial<StateStore>).run !== 'function') {
    throw new TypeError(
      `store must be a StateStore (memoryStore(), redisStore()), got ${describe(store)}`,
    );
  }
  for (const name of ['classify', 'pacing'] as const) {
    const hook = options[name];
    if (hook !== undefined && typeof hook !== 'function') {
      throw new TypeError(`${name} must be a function, got ${describe(hook)}`);
    }
  }
  const on = decorate(user);
  const policies = createPolicies(options, store, clock, (change) =>
    emit(on.breakerStateChange, { ...change }),
  );
  if (typeof store.onStatus === 'function') {
    const { storeDegraded, storeRecovered } = user;
    if (storeDegraded !== undefined || storeRecovered !== undefined) {
      store.onStatus(({ status, error }) =>
        emit(
          status === 'degraded' ? storeDegraded : storeRecovered,
          error === undefined ? {} : { error },
        ),
      );
    }
  }
  const executor = new Executor({
    clock,
    random,
    on,
    policies,
    classify: options.classify,
    pacing: options.pacing,
    mismatch: idempotency.mismatch,
  });
  const defaults: RequestSettings = Object.freeze({ retry, timeout, hedge, key: undefined });
  return Object.freeze({ executor, retry, timeout, idempotency, hedge, random, on, defaults });
}
