/**
 * The core options of a staunch client (the same as `createFetch`'s, without
 * `fetch`), resolved once into an `Executor` for the retry interceptor: the
 * same resolvers, policies and executor as the fetch adapter, so there is one
 * implementation of the retry rules.
 */
import type { StaunchListeners } from '../events.js';
import { emit } from '../events.js';
import { Executor } from '../executor.js';
import { type Clock, type Random, systemClock } from '../internal/clock.js';
import { checkObject, describe } from '../internal/validate.js';
import {
  checkClock,
  checkRandom,
  type IdempotencyOptions,
  type ResolvedIdempotencyOptions,
  type ResolvedRetryOptions,
  type ResolvedTimeoutOptions,
  type RetryOptions,
  resolveIdempotencyOptions,
  resolveRetryOptions,
  resolveTimeoutOptions,
  type TimeoutOptions,
} from '../options.js';
import { createPolicies, type PolicyOptions } from '../policy/policies.js';
import { memoryStore } from '../store/memory.js';
import type { StateStore } from '../store/store.js';
import { withChannels } from './channels.js';
import { CORE_KEYS } from './options.js';

/** The core options: those of `createFetch` from `staunch`, without `fetch`. */
export interface ClientOptions extends PolicyOptions {
  /** Retry policy; a number is the attempts, `false` is one attempt. @default { attempts: 3 } */
  retry?: RetryOptions | number | boolean;
  /** Deadlines in ms; a number is `{ total }`, `false` disables both. @default { attempt: 60_000, total: 300_000 } */
  timeout?: TimeoutOptions | number | false;
  /** Idempotency key header, and whether to add one to POST/PATCH. @default { header: 'Idempotency-Key', auto: false } */
  idempotency?: IdempotencyOptions;
  /** Typed event listeners (also published on the `staunch:*` diagnostics channels). @default {} */
  on?: StaunchListeners;
  /** Time source. @default systemClock */
  clock?: Clock;
  /** Random source in [0, 1). @default Math.random */
  random?: Random;
}

const LISTENER_KEYS = [
  'attemptStart',
  'attempt',
  'retry',
  'giveUp',
  'breakerStateChange',
  'storeDegraded',
  'storeRecovered',
] as const;

/** @internal A resolved client. */
export interface Client {
  readonly executor: Executor;
  readonly retry: ResolvedRetryOptions;
  readonly timeout: ResolvedTimeoutOptions;
  readonly idempotency: ResolvedIdempotencyOptions;
  readonly random: Random;
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
  return o as StaunchListeners;
}

/** Resolves the core options once; `label` names the options object in messages. */
export function resolveClient(options: unknown, label: string): Client {
  const o = (options === undefined ? {} : checkObject(label, options, CORE_KEYS)) as ClientOptions;
  const user = checkListeners(o.on);
  const retry = resolveRetryOptions(o.retry);
  const timeout = resolveTimeoutOptions(o.timeout);
  const idempotency = resolveIdempotencyOptions(o.idempotency);
  const clock = checkClock(o.clock) ?? systemClock;
  const random = checkRandom(o.random) ?? Math.random;
  const store = o.store ?? memoryStore();
  if (typeof (store as Partial<StateStore>).run !== 'function') {
    throw new TypeError(
      `store must be a StateStore (memoryStore(), redisStore()), got ${describe(store)}`,
    );
  }
  const on = withChannels(user, true);
  const policies = createPolicies(o, store, clock, (change) => {
    const listener = on.breakerStateChange;
    if (listener !== undefined) listener({ ...change });
  });
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
  const executor = new Executor({ clock, random, on, policies });
  return Object.freeze({ executor, retry, timeout, idempotency, random });
}
