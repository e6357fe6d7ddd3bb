import type { MemoryStore } from '../../src/store/memory.js';
import type { Json, StateStore, StoreOperation } from '../../src/store/store.js';

/** A store that answers like a remote one: through a promise, a tick later. */
export function asyncStore(inner: StateStore): StateStore {
  return {
    run<A extends Json, R extends Json>(
      key: string,
      op: StoreOperation<A, R>,
      args: A,
      now: number,
    ) {
      return Promise.resolve().then(() => inner.run(key, op, args, now));
    },
  };
}

/** A store that logs the name of every operation it runs. */
export function countingStore(inner: MemoryStore): StateStore & { readonly calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    run<A extends Json, R extends Json>(
      key: string,
      op: StoreOperation<A, R>,
      args: A,
      now: number,
    ) {
      calls.push(op.name);
      return inner.run(key, op, args, now);
    },
  };
}

/** A small seeded PRNG (mulberry32), so simulations are deterministic. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
