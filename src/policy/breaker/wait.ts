/**
 * Where requests wait on an open circuit (issue 9: an open circuit is a
 * not-sent outcome, not a verdict on the request). One room per key and
 * process: the room, not each waiter, asks the store how the circuit stands,
 * once per poll, so a thousand waiters cost one store call per poll.
 *
 * - a probe may go: the waiter with the most attempts to spare goes, to
 *   become the probe (the first such in the queue). A probe that fails
 *   spends the attempt that carried it: carried by a request on its last
 *   attempt, it would hand that failure to the caller however long its
 *   deadline. One on its last attempt goes only when nobody can spare one;
 * - the room is full (`maxWaiting` of the key wait in this process): a new
 *   waiter is refused at once;
 * - open, or the probes out: wait, at most until the break ends or a poll;
 * - closed: the waiters go, paced: first at the rate this process sent to
 *   the key before the circuit opened, then (after one meter bucket) one
 *   per second faster for each released waiter that succeeds (about e-fold a second while all do), half
 *   as fast after the circuit opened again during a release. Each passes the
 *   rate limiter too, so the backlog comes back beside the new traffic, not
 *   as one burst on top, and drains at what the upstream now accepts.
 *
 * A verdict seen by this process (its own probe's outcome) wakes the room at
 * once; other processes' verdicts are seen at the next poll.
 */
import { type Clock, noop, startTimer } from '../../internal/clock.js';
import { LastMap } from '../../internal/last-map.js';
import { linkSignal } from '../../internal/signals.js';
import { METER_BUCKET_MS } from '../rate/meter.js';
import { isPromiseLike } from '../store-call.js';
import { popDue, pushDue } from './until-heap.js';

/** What a peek at the circuit answers: `ok` = closed; `retryAfter: 0` = a probe may go. */
export interface BreakerPeek {
  ok: boolean;
  retryAfter: number;
}

/** Looks at the circuit of `key`, counting its waiters as waiting for `waitMs`. */
export type Peek = (key: string, waitMs: number) => BreakerPeek | Promise<BreakerPeek>;

/**
 * One request waiting in a room. A class, its methods shared: a held request
 * costs heap for as long as the outage lasts (docs/policies.md, "The waiting
 * room's bound"), so a waiter holds no closures and no timer of its own; the
 * room ends its wait at `until`.
 */
class Waiter {
  done = false;
  /** Unlinks the caller's signal. */
  unlink: () => void = noop;
  readonly room: Room;
  /** Attempts the request has left after the one it waits to send. */
  readonly spare: number;
  /** Clock time its wait ends. */
  readonly until: number;
  readonly #resolve: (go: boolean) => void;
  readonly #reject: (reason: unknown) => void;

  constructor(
    room: Room,
    spare: number,
    until: number,
    resolve: (go: boolean) => void,
    reject: (reason: unknown) => void,
  ) {
    this.room = room;
    this.spare = spare;
    this.until = until;
    this.#resolve = resolve;
    this.#reject = reject;
  }

  /** Ends the wait: `go` or not. */
  settle(go: boolean): void {
    if (this.#leave()) this.#resolve(go);
  }

  /** The caller aborted. */
  abort(reason: unknown): void {
    if (this.#leave()) this.#reject(reason);
  }

  #leave(): boolean {
    if (this.done) return false;
    this.done = true;
    this.room.live--;
    if (this.spare > 0) this.room.spares--;
    this.unlink();
    return true;
  }
}

interface Room {
  /** Waiters in arrival order (some may have left: compacted now and then). */
  queue: Waiter[];
  /** The live waiters and some that left, a heap by `until` (./until-heap.ts). */
  readonly deadlines: Waiter[];
  /** Waiters still waiting (`queue` may hold some that left). */
  live: number;
  /** Live waiters with an attempt to spare (`spare > 0`). */
  spares: number;
  running: boolean;
  /** Waiters released per second once the circuit closes. */
  rate: number;
  /** The circuit was closed at the last look: waiters are being released. */
  closed: boolean;
  /** Waiters released so far whose success has not yet grown the rate. */
  owed: number;
  /** When the current release began. */
  since: number;
  /** Ends the room's current sleep early. */
  wake: () => void;
  /** When the room's current sleep ends. */
  wakeAt: number;
  /** When the circuit is due to be looked at again while it refuses. */
  peekAt: number;
}

/** Admissions of one key in this process: `[second, count in it, count in the second before]`. */
type Meter = [number, number, number];

/** The slowest release of a backlog, per second, whatever was measured. */
const MIN_RELEASE_RATE = 1;
const SWEEP_AT = 1024;
/**
 * ms of a release at the earlier pace before successes raise it: one bucket
 * of the rate limiter's meter, so that a limiter that engages on the first
 * 429 of the release measures the release's pace, not the outage's silence.
 */
const GROWTH_AFTER = METER_BUCKET_MS;

/** The waiter to carry a probe: the first of those with the most attempts to spare. */
function carrier(queue: readonly Waiter[]): Waiter | undefined {
  let best: Waiter | undefined;
  for (const w of queue) {
    if (!w.done && (best === undefined || w.spare > best.spare)) best = w;
  }
  return best;
}

export class BreakerWaitingRoom {
  readonly #clock: Clock;
  readonly #poll: number;
  /** How long a waiter counts as waiting in the store: renewed by every poll before it lapses. */
  readonly lease: number;
  readonly #peek: Peek;
  readonly #max: number;
  readonly #rooms = new Map<string, Room>();
  readonly #meters = new LastMap<string, Meter>();

  /** `max`: waiters per key at most (`breaker.maxWaiting`). */
  constructor(
    clock: Clock,
    probeInterval: number,
    peek: Peek,
    max: number = Number.POSITIVE_INFINITY,
  ) {
    this.#clock = clock;
    this.#max = max;
    // Often enough to see another process's verdict soon after it lands.
    this.#poll = Math.max(20, Math.min(250, probeInterval / 4));
    this.lease = 2 * this.#poll + 1;
    this.#peek = peek;
  }

  /**
   * Counts `count` admissions of `key` within one second, `now` (the closed
   * circuit's hot path: one map lookup).
   */
  admitted(key: string, now: number, count = 1): void {
    const second = Math.floor(now / 1000);
    const m = this.#meters.get(key);
    if (m === undefined) {
      if (this.#meters.size >= SWEEP_AT) this.#sweep(second);
      this.#meters.set(key, [second, count, 0]);
    } else if (m[0] === second) m[1] += count;
    else {
      m[2] = m[0] === second - 1 ? m[1] : 0;
      m[0] = second;
      m[1] = count;
    }
  }

  /** Whether `key` has a room (requests waiting, or a backlog being released). */
  holds(key: string): boolean {
    return this.#rooms.size > 0 && this.#rooms.has(key);
  }

  /** This process's recent admissions of `key` per second: the last full second, or the current one if busier. */
  #rate(key: string, now: number): number {
    const m = this.#meters.get(key);
    if (m === undefined) return 0;
    const second = Math.floor(now / 1000);
    if (m[0] === second) {
      const elapsed = Math.max(0.1, (now - second * 1000) / 1000);
      return Math.max(m[2], m[1] / elapsed);
    }
    return m[0] === second - 1 ? m[1] : 0;
  }

  #sweep(second: number): void {
    for (const [key, m] of this.#meters) {
      if (m[0] < second - 60 && !this.#rooms.has(key)) this.#meters.delete(key);
    }
  }

  /**
   * Waits for `key`'s circuit: `true` when the waiter may go (to carry a
   * probe, or released once closed), `false` when `maxWait` ran out first, or
   * at once when the room is full. `spare`: attempts the request has left
   * after this one (see the probe, above).
   */
  wait(key: string, maxWait: number, signal?: AbortSignal, spare = 1): Promise<boolean> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    let room = this.#rooms.get(key);
    if ((room?.live ?? 0) >= this.#max) return Promise.resolve(false);
    if (room === undefined) {
      // The rate of the traffic before the circuit opened: the pace of the release.
      const rate = Math.max(MIN_RELEASE_RATE, this.#rate(key, this.#clock.now()));
      room = {
        queue: [],
        deadlines: [],
        live: 0,
        spares: 0,
        running: false,
        rate,
        closed: false,
        owed: 0,
        since: 0,
        wake: noop,
        wakeAt: Number.POSITIVE_INFINITY,
        peekAt: Number.NEGATIVE_INFINITY,
      };
      this.#rooms.set(key, room);
    }
    const joined = room;
    return new Promise<boolean>((resolve, reject) => {
      const until = this.#clock.now() + Math.max(0, maxWait);
      const waiter = new Waiter(joined, spare, until, resolve, reject);
      if (signal !== undefined) waiter.unlink = linkSignal(signal, (why) => waiter.abort(why));
      joined.queue.push(waiter);
      pushDue(joined.deadlines, waiter);
      joined.live++;
      if (spare > 0) joined.spares++;
      if (!joined.running) void this.#run(key, joined);
      else if (until < joined.wakeAt) {
        // The room sleeps past this one's end: wake it to end the wait in time.
        joined.wakeAt = until;
        joined.wake();
      }
    });
  }

  /**
   * Whether a request waiting for `key`'s circuit in this process has an
   * attempt to spare: one on its last attempt then leaves the probe to it.
   */
  spares(key: string): boolean {
    if (this.#rooms.size === 0) return false;
    return (this.#rooms.get(key)?.spares ?? 0) > 0;
  }

  /**
   * A call to `key` succeeded. While a backlog is being released, each success
   * of a released waiter raises the pace by one per second (the pace then
   * doubles about every second it keeps succeeding), so the backlog drains at
   * what the upstream accepts once it is back, not at the pace before the
   * outage; the rate limiter each waiter passes still bounds it.
   */
  succeeded(key: string): void {
    if (this.#rooms.size === 0) return;
    const room = this.#rooms.get(key);
    if (room === undefined || !room.closed || room.owed <= 0) return;
    if (this.#clock.now() - room.since < GROWTH_AFTER) return;
    room.owed--;
    room.rate += 1;
  }

  /** Whether this process is releasing a backlog of `key` (the circuit closed on its waiters). */
  releasing(key: string): boolean {
    if (this.#rooms.size === 0) return false;
    return this.#rooms.get(key)?.closed ?? false;
  }

  /** How many requests of `key` wait in this process's room. */
  waiting(key: string): number {
    if (this.#rooms.size === 0) return 0;
    return this.#rooms.get(key)?.live ?? 0;
  }

  /** A verdict was seen for `key`: look again now. */
  wake(key: string): void {
    const room = this.#rooms.get(key);
    if (room === undefined) return;
    room.peekAt = Number.NEGATIVE_INFINITY;
    room.wake();
  }

  async #run(key: string, room: Room): Promise<void> {
    room.running = true;
    const clock = this.#clock;
    let lastPeek = Number.NEGATIVE_INFINITY;
    /** While closed: waiters due for release (fractional), as of `tokensAt`. */
    let tokens = 0;
    let tokensAt = 0;
    try {
      for (;;) {
        const now = clock.now();
        this.#expire(room, now);
        if (room.live === 0) break;
        // Waiters that left are dropped once they are half the queue: amortized O(1) each.
        if (room.queue.length > 2 * room.live + 64) room.queue = room.queue.filter((w) => !w.done);
        if (room.deadlines.length > 2 * room.live + 64) {
          const live = room.deadlines.filter((w) => !w.done);
          room.deadlines.length = 0;
          for (const w of live) pushDue(room.deadlines, w);
        }
        room.wakeAt = room.deadlines[0]?.until ?? Number.POSITIVE_INFINITY;
        if (!room.closed || now - lastPeek >= this.#poll) {
          // Woken to end a wait, not to look: the next look is not due yet.
          if (!room.closed && now < room.peekAt) {
            await this.#sleep(room, room.peekAt - now);
            continue;
          }
          lastPeek = now;
          const peek = await this.#look(key);
          if (!peek.ok) {
            if (room.closed) {
              // The circuit opened again while the backlog went: release slower next time.
              room.rate = Math.max(MIN_RELEASE_RATE, room.rate / 2);
              room.owed = 0;
            }
            room.closed = false;
            if (peek.retryAfter <= 0) carrier(room.queue)?.settle(true);
            const ms = peek.retryAfter > 0 ? Math.min(peek.retryAfter, this.#poll) : this.#poll;
            room.peekAt = clock.now() + ms;
            await this.#sleep(room, ms);
            continue;
          }
          if (!room.closed) {
            room.closed = true;
            room.since = clock.now();
            tokens = 1;
            tokensAt = clock.now();
          }
        }
        const at = clock.now();
        tokens += ((at - tokensAt) * room.rate) / 1000;
        tokensAt = at;
        for (const w of room.queue) {
          if (tokens < 1) break;
          if (w.done) continue;
          w.settle(true);
          room.owed++;
          tokens -= 1;
        }
        // A tick no shorter than 10 ms: at high rates several waiters go per tick.
        await this.#sleep(room, Math.max(10, ((1 - tokens) * 1000) / room.rate));
      }
    } finally {
      room.running = false;
      room.wake = noop;
      room.wakeAt = Number.POSITIVE_INFINITY;
      if (room.live === 0) this.#rooms.delete(key);
      else void this.#run(key, room);
    }
  }

  /**
   * Ends the waits whose time is up at `now`: refused while the circuit
   * refuses; while the backlog is released, they go (their own deadline
   * then ends them, not a circuit that is closed).
   */
  #expire(room: Room, now: number): void {
    const heap = room.deadlines;
    for (let w = heap[0]; w !== undefined && (w.done || w.until <= now); w = heap[0]) {
      popDue(heap);
      w.settle(room.closed);
    }
  }

  async #look(key: string): Promise<BreakerPeek> {
    try {
      const answer = this.#peek(key, this.lease);
      return isPromiseLike(answer) ? await answer : answer;
    } catch {
      // The store failed: let the waiters try; the admission decides.
      return { ok: true, retryAfter: 0 };
    }
  }

  /** Sleeps `ms`, or less to end the soonest wait in time (`room.wakeAt`), or until woken. */
  #sleep(room: Room, ms: number): Promise<void> {
    const wakeAt = Math.min(room.wakeAt, this.#clock.now() + ms);
    room.wakeAt = wakeAt;
    return new Promise<void>((resolve) => {
      const cancel = startTimer(this.#clock, wakeAt - this.#clock.now(), () => {
        room.wake = noop;
        resolve();
      });
      room.wake = () => {
        room.wake = noop;
        cancel();
        resolve();
      };
    });
  }
}
