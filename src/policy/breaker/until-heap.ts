/**
 * A binary min-heap of items by the clock time they are due (`until`): the
 * waiting room ends each wait at its time with one timer for the room, not
 * one per waiter (a timer and its closures cost more heap than the waiter).
 */

/** What the heap orders: anything with a due time. */
export interface Due {
  readonly until: number;
}

/** Adds `item` to `heap`. */
export function pushDue<T extends Due>(heap: T[], item: T): void {
  let i = heap.length;
  heap.push(item);
  while (i > 0) {
    const parent = (i - 1) >> 1;
    const p = heap[parent]!;
    if (p.until <= item.until) break;
    heap[i] = p;
    i = parent;
  }
  heap[i] = item;
}

/** Removes and returns the soonest item of `heap` (`undefined` if empty). */
export function popDue<T extends Due>(heap: T[]): T | undefined {
  const top = heap[0];
  const last = heap.pop();
  if (top === undefined || last === undefined || heap.length === 0) return top;
  const n = heap.length;
  let i = 0;
  for (;;) {
    const left = 2 * i + 1;
    if (left >= n) break;
    const right = left + 1;
    const child = right < n && heap[right]!.until < heap[left]!.until ? right : left;
    if (heap[child]!.until >= last.until) break;
    heap[i] = heap[child]!;
    i = child;
  }
  heap[i] = last;
  return top;
}
