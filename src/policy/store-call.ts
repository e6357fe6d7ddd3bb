import { noop } from '../internal/clock.js';
import type { Json, StateStore, StoreOperation } from '../store/store.js';

/**
 * Runs `op` on `store` and hands its result to `then`, without an extra
 * promise hop when the store answers synchronously (the memory store does).
 * A synchronous throw from the store or from `then` becomes a rejection.
 */
export function runOp<A extends Json, R extends Json, T>(
  store: StateStore,
  key: string,
  op: StoreOperation<A, R>,
  args: A,
  now: number,
  then: (result: R) => T,
): Promise<T> {
  try {
    const result = store.run(key, op, args, now);
    if (isThenable(result)) return Promise.resolve(result).then(then);
    return Promise.resolve(then(result));
  } catch (error) {
    return Promise.reject(error);
  }
}

function isThenable<R>(value: R | Promise<R>): value is Promise<R> {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}

/**
 * Like {@link runOp}, but answers synchronously when the store does (the
 * memory store): the hot path of a request then costs no promise and no
 * microtask turn. A synchronous throw propagates as a throw.
 */
export function runOpMaybe<A extends Json, R extends Json, T>(
  store: StateStore,
  key: string,
  op: StoreOperation<A, R>,
  args: A,
  now: number,
  then: (result: R) => T,
): T | Promise<T> {
  const result = store.run(key, op, args, now);
  if (isThenable(result)) return Promise.resolve(result).then(then);
  return then(result);
}

/** True for a promise or any thenable. */
export function isPromiseLike<T>(value: T | Promise<T>): value is Promise<T> {
  return isThenable(value);
}

/**
 * A fire-and-forget policy call's result: a rejection is ignored (the caller
 * catches a synchronous throw itself, without a closure on the hot path).
 */
export function ignoreRejection(pending: void | Promise<void>): void {
  if (pending !== undefined) pending.catch(noop);
}
