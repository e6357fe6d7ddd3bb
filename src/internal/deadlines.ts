/**
 * Attempt deadlines on the system clock, many to one timer.
 *
 * A `setTimeout` per attempt (a `Timeout` object, its async id, a timer-list
 * insertion and removal) is a measurable part of a request that succeeds on
 * loopback. Attempts of one client mostly share one duration, so their
 * deadlines come in the order they are set: such deadlines wait in one list,
 * in that order, under one timer armed no later than the first of them. A
 * deadline that settles first is unlinked (no timer call); when the timer
 * fires it runs the deadlines that are due and re-arms for the next one. A
 * deadline that would not come last in the list (another duration) gets a
 * `setTimeout` of its own, as before. The timer is cleared when the list
 * empties, so an idle process is not kept alive by it.
 */
import { type Clock, startTimer, systemClock } from './clock.js';

/** A deadline set by {@link startDeadline}: `cancel()` before it fires, and it never will. */
export interface Deadline {
  cancel(): void;
}

/**
 * Monotonic milliseconds where the runtime has them (a wall-clock step must
 * not move deadlines). On Node, `process.hrtime()`: `performance.now()` checks
 * its receiver on every call, about 200 instructions more a request on
 * Node 22 and 24 (bench/instructions.mjs).
 */
const proc = (globalThis as { process?: { hrtime?: () => [number, number] } }).process;
const now: () => number =
  typeof proc?.hrtime === 'function'
    ? () => {
        // Looked up on each call, as fake timers replace it.
        const t = (proc.hrtime as () => [number, number])();
        return t[0] * 1e3 + t[1] / 1e6;
      }
    : typeof performance !== 'undefined' && typeof performance.now === 'function'
      ? () => performance.now()
      : Date.now;

class Entry implements Deadline {
  /** `now()` when it is due. */
  readonly at: number;
  readonly ms: number;
  readonly fire: () => void;
  prev: Entry | undefined;
  next: Entry | undefined;
  /** In the shared list (until it fires or is cancelled). */
  linked = false;
  /** Its own timer, when it could not join the list. */
  own: ReturnType<typeof setTimeout> | undefined;

  constructor(at: number, ms: number, fire: () => void) {
    this.at = at;
    this.ms = ms;
    this.fire = fire;
  }

  cancel(): void {
    if (this.linked) unlink(this);
    else if (this.own !== undefined) {
      clearTimeout(this.own);
      this.own = undefined;
    }
  }
}

let head: Entry | undefined;
let tail: Entry | undefined;
let timer: ReturnType<typeof setTimeout> | undefined;

function unlink(e: Entry): void {
  e.linked = false;
  const { prev, next } = e;
  if (prev === undefined) head = next;
  else prev.next = next;
  if (next === undefined) tail = prev;
  else next.prev = prev;
  e.prev = e.next = undefined;
  if (head === undefined && timer !== undefined) {
    clearTimeout(timer);
    timer = undefined;
  }
}

/** Runs the deadlines that are due (within a millisecond, as timers round), then re-arms. */
function onTimer(): void {
  timer = undefined;
  const t = now();
  try {
    while (head !== undefined && head.at - t < 1) {
      const e = head;
      unlink(e);
      e.fire();
    }
  } finally {
    // For the first deadline left (a deadline set by `fire` may have armed a later one),
    // and never for longer than its own duration.
    if (head !== undefined) {
      if (timer !== undefined) clearTimeout(timer);
      timer = setTimeout(onTimer, Math.max(1, Math.min(Math.ceil(head.at - now()), head.ms)));
    }
  }
}

/**
 * Runs `onFire` after `ms` on `clock` unless the returned deadline is
 * cancelled first: on the system clock through the shared list above, on
 * any other clock through {@link startTimer}.
 */
export function startDeadline(clock: Clock, ms: number, onFire: () => void): Deadline {
  if (clock !== systemClock) return { cancel: startTimer(clock, ms, onFire) };
  const e = new Entry(now() + ms, ms, onFire);
  if (tail !== undefined && e.at < tail.at) {
    e.own = setTimeout(() => {
      e.own = undefined;
      onFire();
    }, ms);
    return e;
  }
  e.linked = true;
  e.prev = tail;
  if (tail === undefined) head = e;
  else tail.next = e;
  tail = e;
  timer ??= setTimeout(onTimer, ms);
  return e;
}
