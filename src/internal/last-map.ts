/**
 * A `Map` that remembers its last lookup. A client mostly calls one origin,
 * and its policy key is then the same string object on every request
 * (policies.ts, `cachedOriginKey`): a lookup of that key is one pointer
 * compare instead of a hash-map probe. Every write keeps the memory true.
 */
export class LastMap<K, V> extends Map<K, V> {
  #lastKey: K | undefined;
  #last: V | undefined;
  /** Whether {@link #lastKey} is remembered (`undefined` may be a key). */
  #known = false;

  /** Empty: `Map`'s constructor would call `set` before these fields exist. */
  constructor() {
    super();
  }

  override get(key: K): V | undefined {
    if (this.#known && key === this.#lastKey) return this.#last;
    const value = super.get(key);
    this.#lastKey = key;
    this.#last = value;
    this.#known = true;
    return value;
  }

  override set(key: K, value: V): this {
    super.set(key, value);
    this.#lastKey = key;
    this.#last = value;
    this.#known = true;
    return this;
  }

  override delete(key: K): boolean {
    if (key === this.#lastKey) this.#forget();
    return super.delete(key);
  }

  override clear(): void {
    this.#forget();
    super.clear();
  }

  #forget(): void {
    this.#known = false;
    this.#lastKey = this.#last = undefined;
  }
}
