import type { Json, StateStore, StoreOperation } from './store.js';

/** Options of {@link memoryStore}. */
export interface MemoryStoreOptions {
  /**
   * Operations between two sweeps of expired keys. A sweep also waits until at
   * least as many operations as there are keys have run, so its cost stays
   * O(1) per operation however many keys are held. Expired keys are dropped
   * on access in any case; the sweep is what makes idle keys vanish.
   * @default 1000
   */
  sweepEvery?: number | undefined;
}

/** The in-process {@link StateStore}: one `Map`, each operation applied synchronously. */
export interface MemoryStore extends StateStore {
  /** Applies `op` to `key` at once and returns its result synchronously. */
  run<A extends Json, R extends Json>(
    key: string,
    op: StoreOperation<A, R>,
    args: A,
    now: number,
  ): R;
  /** Keys held, expired ones included until they are accessed or swept. */
  readonly size: number;
  /** The state of `key` at `now` (`undefined` if absent or expired), for tests and diagnostics. */
  peek(key: string, now: number): Json | undefined;
  /** Drops every key. */
  clear(): void;
}

interface Entry {
  state: Json;
  expiresAt: number;
}

/**
 * @internal The memory store's one shortcut, for an operation that would
 * write back the very state it read (the breaker's closed admission):
 * `store[TOUCH](key, state, now, ttl)` is true, having done what that
 * operation's write would do, when `key` still holds exactly `state` (the
 * same object: every other write stores a new one) and has not expired, or
 * holds nothing and `state` is `undefined`. False: run the operation.
 */
export const TOUCH: unique symbol = Symbol('staunch.memoryStore.touch');

/** @internal A store that has {@link TOUCH}. */
export interface Touchable {
  [TOUCH](key: string, state: Json | undefined, now: number, ttl: number): boolean;
}

/**
 * The default state store: per-key state in a `Map`, for one process. Each
 * `StoreOperation` runs synchronously inside `run`, so no other operation can
 * interleave with it: that is what makes it atomic. A key lives `ttl` ms after
 * its last write (a non-finite `ttl` never expires; `ttl <= 0` deletes it).
 * There is no timer: expired keys are dropped on access and by a sweep that
 * runs every so many operations, so the store never keeps a process alive.
 * @example
 * const store = memoryStore();
 * const fetch = createFetch({ store });
 */
export function memoryStore(options: MemoryStoreOptions = {}): MemoryStore {
  const sweepEvery = options.sweepEvery ?? 1000;
  if (typeof sweepEvery !== 'number') {
    throw new TypeError(
      `memoryStore.sweepEvery must be an integer >= 1, got ${String(sweepEvery)}`,
    );
  }
  if (!Number.isSafeInteger(sweepEvery) || sweepEvery < 1) {
    throw new RangeError(`memoryStore.sweepEvery must be an integer >= 1, got ${sweepEvery}`);
  }
  const entries = new Map<string, Entry>();
  let opsSinceSweep = 0;

  const sweep = (now: number): void => {
    for (const [key, entry] of entries) if (entry.expiresAt <= now) entries.delete(key);
    opsSinceSweep = 0;
  };

  const read = (key: string, now: number): Json | undefined => {
    const entry = entries.get(key);
    if (entry === undefined) return undefined;
    if (entry.expiresAt <= now) {
      entries.delete(key);
      return undefined;
    }
    return entry.state;
  };

  const store: MemoryStore = {
    run<A extends Json, R extends Json>(
      key: string,
      op: StoreOperation<A, R>,
      args: A,
      now: number,
    ): R {
      if (++opsSinceSweep >= sweepEvery && opsSinceSweep >= entries.size) sweep(now);
      const update = op.apply(read(key, now), args, now);
      const ttl = update.ttl;
      if (update.state === undefined || !(ttl > 0)) entries.delete(key);
      else {
        const entry = entries.get(key);
        if (entry === undefined) entries.set(key, { state: update.state, expiresAt: now + ttl });
        else {
          entry.state = update.state;
          entry.expiresAt = now + ttl;
        }
      }
      return update.result;
    },
    get size(): number {
      return entries.size;
    },
    peek: read,
    clear(): void {
      entries.clear();
    },
  };
  const touch: Touchable[typeof TOUCH] = (key, state, now, ttl) => {
    const entry = entries.get(key);
    if (entry === undefined) return state === undefined;
    if (entry.state !== state || entry.expiresAt <= now || !(ttl > 0)) return false;
    entry.expiresAt = now + ttl;
    return true;
  };
  Object.defineProperty(store, TOUCH, { value: touch });
  return store;
}
