/**
 * Where per-key policy state lives. Every decision a policy makes (take a
 * token, record an outcome and maybe trip, admit a half-open probe) is one
 * `StoreOperation` applied atomically to one key: a pure function from the
 * key's current JSON state to its next state and a result. The memory store
 * runs it in-process; the Redis store (`staunch/redis`) runs the same
 * operation as one Lua script, keyed by `name`. There is never a
 * read-modify-write split across two calls.
 */

/** State is plain JSON so that any store can keep it. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** What an operation returns: the key's next state, its lifetime, and the decision. */
export interface StoreUpdate<R> {
  /** The key's next state; `undefined` deletes the key. */
  state: Json | undefined;
  /** Milliseconds after which an untouched key may vanish. */
  ttl: number;
  /** The decision handed back to the policy. */
  result: R;
}

/** One atomic decision on one key. */
export interface StoreOperation<A extends Json, R extends Json> {
  /** Stable identifier; a remote store maps it to its script. */
  readonly name: string;
  /**
   * Pure: no I/O, no clock reads, no randomness. `now` is the store's time in
   * epoch ms (the Redis store passes Redis's `TIME`).
   */
  apply(state: Json | undefined, args: A, now: number): StoreUpdate<R>;
}

/** A place for per-key policy state. */
export interface StateStore {
  /**
   * Applies `op` to `key` atomically. `now` is the caller's clock; a shared
   * store may use its own time instead so that skewed machines agree.
   */
  run<A extends Json, R extends Json>(
    key: string,
    op: StoreOperation<A, R>,
    args: A,
    now: number,
  ): R | Promise<R>;
  /**
   * Optional: a shared store that can lose its backend reports it here
   * (`degraded` once when it falls back to local state, `recovered` when it
   * is shared again). Returns an unsubscribe function.
   */
  onStatus?(listener: (status: StoreStatus) => void): () => void;
}

/** A shared store's health change. */
export interface StoreStatus {
  status: 'degraded' | 'recovered';
  /** What failed, when degraded; must carry no secret. */
  error?: string;
}
