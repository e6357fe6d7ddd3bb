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
 * `setTimeout` of its own, as before. An idle process is not kept alive by
 * the timer (by the steady list's, for at most a tick).
 *
 * Two such lists. One clears its timer as soon as no deadline is left
 * ({@link startDeadline}). The steady one ({@link startSteadyDeadline}), for
 * the attempts of the undici adapters, re-arms its timer at least every
 * {@link STEADY_TICK_MS} while deadlines are pending and lets it go at the
 * first tick that finds none: a busy process keeps one ref'd timer all along
 * instead of making and clearing one each time the list empties and fills.
 */
import { type Clock, noop, startTimer, systemClock, timerDelay } from './clock.js';

/** A deadline set by {@link startDeadline}: `cancel()` before it fires, and it never will. */
export interface Deadline {
  cancel(): void;
}

/**
 * What a deadline runs when it fires: a function, or an object's
 * `onDeadline()` (a per-request handler passes itself: no closure made).
 */
export type DeadlineCallback = (() => void) | { onDeadline(): void };

function call(onFire: DeadlineCallback): void {
  if (typeof onFire === 'function') onFire();
  else onFire.onDeadline();
}

/**
 * Monotonic milliseconds (a wall-clock step must not move deadlines):
 * `performance.now()`, else `process.hrtime()`. Counted with callgrind, a
 * reading costs 90-250 instructions on Node 26 (the global is a lazy getter,
 * `now` checks its receiver) against 390 for `process.hrtime()` (its array)
 * and 400 for `Date.now()`; on Node 24 the two monotonic clocks cost the
 * same, on Node 22 `performance` about 100 more.
 */
const proc = (globalThis as { process?: { hrtime?: () => [number, number] } }).process;
const now: () => number =
  typeof performance !== 'undefined' && typeof performance.now === 'function'
    ? // Looked up on each call, as fake timers replace it.
      () => performance.now()
    : typeof proc?.hrtime === 'function'
      ? () => {
          const t = (proc.hrtime as () => [number, number])();
          return t[0] * 1e3 + t[1] / 1e6;
        }
      : Date.now;

/**
 * The deadlines of one kind, in the order they are due, under one timer: a
 * ring through a sentinel entry, so that linking and unlinking take no
 * branch (an empty list's own stores, met only now and then by a busy
 * process, de-optimised the code that sets and settles every deadline).
 */
class List {
  /** The sentinel: `root.next` is the first deadline, `root.prev` the last; itself when empty. */
  readonly root: Entry;
  timer: ReturnType<typeof setTimeout> | undefined;
  /** `now()` when the armed timer fires. */
  due = 0;
  /**
   * The longest the timer is armed for: `Infinity` (it waits for the first
   * deadline), or {@link STEADY_TICK_MS} for the steady list.
   */
  readonly tick: number;
  /** Runs the deadlines that are due (within a millisecond, as timers round), then re-arms. */
  readonly onTimer = (): void => {
    this.timer = undefined;
    const root = this.root;
    const t = now();
    try {
      while (root.next !== root && root.next!.at - t < 1) {
        const e = root.next!;
        this.unlink(e);
        call(e.fire);
      }
    } finally {
      // For the first deadline left (a deadline set by `fire` may have armed a later one),
      // and never for longer than its own duration.
      const head = root.next!;
      if (head !== root) {
        const t1 = now();
        const ms = Math.max(1, Math.min(Math.ceil(head.at - t1), head.ms, this.tick));
        this.armFor(t1 + ms, ms);
      }
    }
  };

  constructor(tick: number) {
    this.tick = tick;
    const root = new Entry(this, Number.NEGATIVE_INFINITY, 0, noop);
    root.prev = root.next = root;
    this.root = root;
  }

  /** Arms the list's timer for `at`, `ms` from now (in place of one armed for later, if any). */
  armFor(at: number, ms: number): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = setTimeout(this.onTimer, timerDelay(ms));
    this.due = at;
  }

  /**
   * Takes `e` out. The timer stays armed: the steady list's fires within a
   * tick and, finding the list empty, goes; so a busy process does not clear
   * and arm a timer each time its last pending attempt answers.
   */
  unlink(e: Entry): void {
    e.linked = false;
    const prev = e.prev!;
    const next = e.next!;
    prev.next = next;
    next.prev = prev;
    e.prev = e.next = undefined;
  }

  start(ms: number, onFire: DeadlineCallback): Deadline {
    const e = new Entry(this, now() + ms, ms, onFire);
    const root = this.root;
    const tail = root.prev!;
    if (e.at < tail.at) {
      e.own = setTimeout(() => {
        e.own = undefined;
        call(onFire);
      }, timerDelay(ms));
      return e;
    }
    e.linked = true;
    e.prev = tail;
    e.next = root;
    tail.next = e;
    root.prev = e;
    // The steady list's timer may still be armed for a longer deadline that has gone.
    if (this.timer === undefined || e.at < this.due) {
      const wait = Math.min(ms, this.tick);
      this.armFor(e.at - ms + wait, wait);
    }
    return e;
  }
}

/** A list whose timer holds the process open: cleared once no deadline is left, so an idle process is not. */
class StrongList extends List {
  constructor() {
    super(Number.POSITIVE_INFINITY);
  }

  override unlink(e: Entry): void {
    super.unlink(e);
    if (this.root.next === this.root && this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
  }
}

class Entry implements Deadline {
  readonly list: List;
  /** `now()` when it is due. */
  readonly at: number;
  readonly ms: number;
  readonly fire: DeadlineCallback;
  /** Its neighbours in the list's ring while linked. */
  prev: Entry | undefined;
  next: Entry | undefined;
  /** In the shared list (until it fires or is cancelled). */
  linked = false;
  /** Its own timer, when it could not join the list. */
  own: ReturnType<typeof setTimeout> | undefined;

  constructor(list: List, at: number, ms: number, fire: DeadlineCallback) {
    this.list = list;
    this.at = at;
    this.ms = ms;
    this.fire = fire;
  }

  cancel(): void {
    if (this.linked) this.list.unlink(this);
    else if (this.own !== undefined) {
      clearTimeout(this.own);
      this.own = undefined;
    }
  }
}

/**
 * How often the steady list's timer fires while deadlines are pending, ms:
 * also the longest it holds an idle process open after the last one settled.
 */
export const STEADY_TICK_MS = 100;

const strong = new StrongList();
const steady = new List(STEADY_TICK_MS);

/**
 * Runs `onFire` after `ms` on `clock` unless the returned deadline is
 * cancelled first: on the system clock through the shared list above, on
 * any other clock through {@link startTimer}. Its timer holds the process
 * open, as a `setTimeout` does.
 */
export function startDeadline(clock: Clock, ms: number, onFire: DeadlineCallback): Deadline {
  if (clock !== systemClock) {
    const fire = typeof onFire === 'function' ? onFire : () => onFire.onDeadline();
    return { cancel: startTimer(clock, ms, fire) };
  }
  return strong.start(ms, onFire);
}

/**
 * {@link startDeadline} on the steady list, for attempts that come and go
 * many at a time beside undici's own timers (the undici adapters'). Its
 * timer holds the process open while a deadline is pending, as
 * `startDeadline`'s does, and for at most {@link STEADY_TICK_MS} after.
 *
 * Why: undici arms an unref'd keep-alive `Timeout` for every response, built
 * ref'd first. A ref'd deadline timer cleared whenever the list emptied
 * moved Node's count of ref'd timers between 0 and 1 at random, and each of
 * undici's timers built while it was 0 took a path (`incRefCount`'s call to
 * the timer binding) that Node's optimised `Timeout` constructor had not
 * seen: it de-optimised, for every timer of the process, and on Node 24 ran
 * on V8's mid tier for the rest of a run (bench/instructions.mjs: about
 * 1,000 instructions a request of `createAgent`'s). With the count held at
 * 1 all along, undici's timers never take that path, nor, on Node 22, the
 * two binding calls a ref'd-then-unref'd timer costs when the count is 0.
 */
export function startSteadyDeadline(clock: Clock, ms: number, onFire: DeadlineCallback): Deadline {
  if (clock !== systemClock) return { cancel: startTimer(clock, ms, () => call(onFire)) };
  return steady.start(ms, onFire);
}

/** Marks a fetch function whose attempts' deadlines go on the steady list. */
const STEADY_DEADLINES: unique symbol = Symbol('staunch.steadyDeadlines');

/** Marks `fetch` (staunch/undici's own transport): its attempts' deadlines go on the steady list. */
export function markSteadyDeadlines<F extends object>(fetch: F): F {
  Object.defineProperty(fetch, STEADY_DEADLINES, { value: true });
  return fetch;
}

/** Whether `fetch` was marked by {@link markSteadyDeadlines}: its attempts use {@link startSteadyDeadline}. */
export function steadyDeadlines(fetch: object): boolean {
  return (fetch as { [STEADY_DEADLINES]?: true })[STEADY_DEADLINES] === true;
}

/** @internal Whether the steady list's timer is armed (tests count ref'd timers around it). */
export function steadyArmed(): boolean {
  return steady.timer !== undefined;
}

/** @internal Whether the steady list's timer is armed and holds the process open (ref'd). */
export function steadyHoldsOpen(): boolean {
  const timer = steady.timer as { hasRef?: () => boolean } | undefined;
  return timer?.hasRef?.() === true;
}
