import { describe, expect, it } from 'vitest';
import { memoryStore } from '../../src/store/memory.js';
import type { Json, StoreOperation } from '../../src/store/store.js';

/** Increments a counter; the argument is the ttl. */
const increment: StoreOperation<number, number> = {
  name: 'test.increment',
  apply(state, ttl) {
    const next = (typeof state === 'number' ? state : 0) + 1;
    return { state: next, ttl, result: next };
  },
};

const remove: StoreOperation<null, Json> = {
  name: 'test.remove',
  apply(state) {
    return { state: undefined, ttl: 0, result: state ?? null };
  },
};

describe('memoryStore', () => {
  it('applies an operation synchronously and returns its result, not a promise', () => {
    const store = memoryStore();
    const first = store.run('k', increment, 1_000, 0);
    expect(first).toBe(1);
    expect(store.run('k', increment, 1_000, 0)).toBe(2);
    expect(store.peek('k', 0)).toBe(2);
  });

  it('keeps keys apart', () => {
    const store = memoryStore();
    store.run('a', increment, 1_000, 0);
    store.run('a', increment, 1_000, 0);
    expect(store.run('b', increment, 1_000, 0)).toBe(1);
  });

  it('passes the state, args and now to the operation', () => {
    const store = memoryStore();
    const seen: unknown[] = [];
    const spy: StoreOperation<{ x: number }, null> = {
      name: 'test.spy',
      apply(state, args, now) {
        seen.push([state, args, now]);
        return { state: 'S', ttl: 10, result: null };
      },
    };
    store.run('k', spy, { x: 1 }, 5);
    store.run('k', spy, { x: 2 }, 6);
    expect(seen).toEqual([
      [undefined, { x: 1 }, 5],
      ['S', { x: 2 }, 6],
    ]);
  });

  it('deletes a key when the operation returns state undefined', () => {
    const store = memoryStore();
    store.run('k', increment, 1_000, 0);
    expect(store.run('k', remove, null, 0)).toBe(1);
    expect(store.size).toBe(0);
    expect(store.peek('k', 0)).toBeUndefined();
  });

  it.each([
    [100, 99, 1],
    [100, 100, undefined],
    [100, 5_000, undefined],
    [Number.POSITIVE_INFINITY, 1e15, 1],
  ])('with ttl %d a key read %d ms later holds %s', (ttl, later, expected) => {
    const store = memoryStore();
    store.run('k', increment, ttl, 1_000);
    expect(store.peek('k', 1_000 + later)).toBe(expected);
  });

  it.each([0, -5, Number.NaN])('ttl %d deletes the key at once', (ttl) => {
    const store = memoryStore();
    expect(store.run('k', increment, ttl, 0)).toBe(1);
    expect(store.size).toBe(0);
  });

  it('drops an expired key lazily: the next operation starts from undefined', () => {
    const store = memoryStore();
    store.run('k', increment, 100, 0);
    store.run('k', increment, 100, 50);
    expect(store.run('k', increment, 100, 149)).toBe(3);
    expect(store.run('k', increment, 100, 249)).toBe(1);
  });

  it('sweeps expired keys every sweepEvery operations, so idle keys vanish', () => {
    const store = memoryStore({ sweepEvery: 10 });
    for (let i = 0; i < 5; i++) store.run(`idle${i}`, increment, 100, 0);
    expect(store.size).toBe(5);
    for (let i = 0; i < 4; i++) store.run('busy', increment, 1_000, 500);
    expect(store.size).toBe(6);
    store.run('busy', increment, 1_000, 500);
    expect(store.size).toBe(1);
  });

  it('waits for at least as many operations as keys before sweeping again', () => {
    const store = memoryStore({ sweepEvery: 2 });
    // The 2nd op sweeps (2 ops >= 1 key); afterwards the 18 ops since never
    // catch up with the growing key count.
    for (let i = 0; i < 20; i++) store.run(`k${i}`, increment, 100, 0);
    store.run('busy', increment, 1_000, 500); // 19 ops < 20 keys
    store.run('busy', increment, 1_000, 500); // 20 ops < 21 keys
    expect(store.size).toBe(21);
    store.run('busy', increment, 1_000, 500); // 21 ops >= 21 keys: sweep
    expect(store.size).toBe(1);
  });

  it('clear drops everything', () => {
    const store = memoryStore();
    store.run('a', increment, 1_000, 0);
    store.clear();
    expect(store.size).toBe(0);
  });

  it('propagates an operation that throws and leaves the state as it was', () => {
    const store = memoryStore();
    store.run('k', increment, 1_000, 0);
    const boom: StoreOperation<null, null> = {
      name: 'test.boom',
      apply() {
        throw new Error('boom');
      },
    };
    expect(() => store.run('k', boom, null, 0)).toThrow('boom');
    expect(store.peek('k', 0)).toBe(1);
  });

  it.each([
    [{ sweepEvery: 0 }, RangeError, 'memoryStore.sweepEvery must be an integer >= 1, got 0'],
    [{ sweepEvery: 1.5 }, RangeError, 'got 1.5'],
    [{ sweepEvery: '10' as unknown as number }, TypeError, 'got 10'],
  ])('rejects options %o', (options, type, message) => {
    expect(() => memoryStore(options)).toThrow(type);
    expect(() => memoryStore(options)).toThrow(message);
  });
});
