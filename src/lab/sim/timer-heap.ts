/** The virtual clock's timer heap moved to `testing/` with the clock. */
export { type TimerHandle, TimerHeap } from '../../testing/timer-heap.js';
