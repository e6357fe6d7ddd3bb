/**
 * The virtual clock's queue: a binary min-heap of timers ordered by due
 * time, then by the order they were scheduled in. Struct of arrays: a timer
 * is a slot in typed arrays (due, order, generation) plus its callback, and
 * the heap holds slot numbers, so that sifting moves integers, not objects
 * (at two million timers a run, an object per timer and a heap of pointers
 * spent most of the run in the garbage collector).
 */

/** A timer's handle: its slot and the slot's generation when it was scheduled. */
export type TimerHandle = number;

const INITIAL = 1024;

export class TimerHeap {
  #due = new Float64Array(INITIAL);
  #order = new Float64Array(INITIAL);
  #gen = new Uint32Array(INITIAL);
  #fns: ((() => void) | undefined)[] = [];
  #heap = new Int32Array(INITIAL);
  #size = 0;
  #slots = 0;
  readonly #free: number[] = [];
  #seq = 0;

  /** Timers queued, cancelled ones included until they come due. */
  get size(): number {
    return this.#size;
  }

  /** The earliest due time queued (`Infinity` when empty). */
  peekDue(): number {
    return this.#size === 0 ? Number.POSITIVE_INFINITY : this.#due[this.#heap[0]!]!;
  }

  /** The earliest due time of a live timer (`Infinity` when none): cancelled timers on top are dropped. */
  peekLive(): number {
    while (this.#size > 0 && this.#fns[this.#heap[0]!] === undefined) this.pop();
    return this.peekDue();
  }

  /** Due times of the live (not cancelled) timers, soonest first. */
  liveDues(): number[] {
    const dues: number[] = [];
    for (let i = 0; i < this.#size; i++) {
      const slot = this.#heap[i]!;
      if (this.#fns[slot] !== undefined) dues.push(this.#due[slot]!);
    }
    return dues.sort((a, b) => a - b);
  }

  /** Queues `fn` at `due`; returns the handle `cancel` takes. */
  push(due: number, fn: () => void): TimerHandle {
    let slot = this.#free.pop();
    if (slot === undefined) {
      slot = this.#slots++;
      if (slot >= this.#due.length) this.#growSlots();
    }
    this.#due[slot] = due;
    this.#order[slot] = this.#seq++;
    this.#fns[slot] = fn;
    if (this.#size >= this.#heap.length) {
      const heap = new Int32Array(this.#heap.length * 2);
      heap.set(this.#heap);
      this.#heap = heap;
    }
    const h = this.#heap;
    let i = this.#size++;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.#before(slot, h[parent]!)) break;
      h[i] = h[parent]!;
      i = parent;
    }
    h[i] = slot;
    // Handle: slot in the low 24 bits' worth of range, generation above (both fit a double exactly).
    return this.#gen[slot]! * 2 ** 26 + slot;
  }

  /** Cancels the timer of `handle` if it has not run yet (it stays queued, dead, until due). */
  cancel(handle: TimerHandle): void {
    const slot = handle % 2 ** 26;
    if (this.#gen[slot] === Math.floor(handle / 2 ** 26)) this.#fns[slot] = undefined;
  }

  /** Removes the earliest timer; returns its callback, `undefined` if it was cancelled. */
  pop(): (() => void) | undefined {
    const h = this.#heap;
    const slot = h[0]!;
    const last = h[--this.#size]!;
    const n = this.#size;
    if (n > 0) {
      let i = 0;
      for (;;) {
        const left = 2 * i + 1;
        if (left >= n) break;
        const right = left + 1;
        const child = right < n && this.#before(h[right]!, h[left]!) ? right : left;
        if (!this.#before(h[child]!, last)) break;
        h[i] = h[child]!;
        i = child;
      }
      h[i] = last;
    }
    const fn = this.#fns[slot];
    this.#fns[slot] = undefined;
    this.#gen[slot] = (this.#gen[slot]! + 1) % 2 ** 26;
    this.#free.push(slot);
    return fn;
  }

  #before(a: number, b: number): boolean {
    const da = this.#due[a]!;
    const db = this.#due[b]!;
    return da < db || (da === db && this.#order[a]! < this.#order[b]!);
  }

  #growSlots(): void {
    const size = this.#due.length * 2;
    const due = new Float64Array(size);
    due.set(this.#due);
    this.#due = due;
    const order = new Float64Array(size);
    order.set(this.#order);
    this.#order = order;
    const gen = new Uint32Array(size);
    gen.set(this.#gen);
    this.#gen = gen;
  }
}
