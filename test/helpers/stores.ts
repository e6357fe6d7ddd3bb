import type { MemoryStore, StateStore } from '../../src/store/index.js';

/**
 * The memory store behind a wrapper that answers every operation a turn
 * later: admission then waits (the executor's loop runs attempt 1), and
 * the policies have no quick path and no quiet ledger, so that every
 * attempt asks them. The reference the fast paths are compared with.
 */
export function deferred(inner: MemoryStore): StateStore {
  return {
    run: (key, op, args, now) => Promise.resolve().then(() => inner.run(key, op, args, now)),
  };
}
