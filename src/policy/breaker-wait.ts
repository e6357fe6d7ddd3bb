/**
 * Where requests wait on an open circuit (issue 9: an open circuit is a
 * not-sent outcome, not a verdict on the request). One room per key and
 * process: the room, not each waiter, asks the store how the circuit stands,
 * once per poll, so a thousand waiters cost one store call per poll.
 *
 * - a probe may go: the head of the queue goes, to become the probe;
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
import { type Clock, noop, startTimer } from '../internal/clock.js';
import { LastMap } from '../internal/last-map.js';
import { linkSignal } from '../internal/signals.js';
import { METER_BUCKET_MS } from './rate-meter.js';
import { isPromiseLike } from './store-call.js';

/** What a peek at the circuit answers: `ok` = closed; `retryAfter: 0` = a probe may go. */
export interface BreakerPeek {
  ok: boolean;
  retryAfter: number;
}

/** Looks at the circuit of `key`, counting its waiters as waiting for `waitMs`. */
export type Peek = (key: string, waitMs: number) => BreakerPeek | Promise<BreakerPeek>;

interface Waiter {
  done: boolean;
  settle(go: boolean): void;
}

interface Room {
  queue: Waiter[];
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

export class BreakerWaitingRoom {
  readonly #clock: Clock;
  readonly #poll: number;
  /** How long a waiter counts as waiting in the store: renewed by every poll before it lapses. */
  readonly lease: number;
  readonly #peek: Peek;
  readonly #rooms = new Map<string, Room>();
  readonly #meters = new LastMap<string, Meter>();

  constructor(clock: Clock, probeInterval: number, peek: Peek) {
    this.#clock = clock;
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

  wait(key: string, maxWait: number, signal?: AbortSignal): Promise<boolean> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<boolean>((resolve, reject) => {
      let unlink = noop;
      let cancelTimer = noop;
      const waiter: Waiter = {
        done: false,
        settle: (go) => {
          if (waiter.done) return;
          waiter.done = true;
          cancelTimer();
          unlink();
          resolve(go);
        },
      };
      if (signal !== undefined) {
        unlink = linkSignal(signal, (reason) => {
          if (waiter.done) return;
          waiter.done = true;
          cancelTimer();
          reject(reason);
        });
      }
      let room = this.#rooms.get(key);
      if (room === undefined) {
        // The rate of the traffic before the circuit opened: the pace of the release.
        const rate = Math.max(MIN_RELEASE_RATE, this.#rate(key, this.#clock.now()));
        room = { queue: [], running: false, rate, closed: false, owed: 0, since: 0, wake: noop };
        this.#rooms.set(key, room);
      }
      const joined = room;
      // Out of time: refused while the circuit refuses; while the backlog is released, it goes
      // (its own deadline then ends it, not a circuit that is closed).
      cancelTimer = startTimer(this.#clock, Math.max(0, maxWait), () =>
        waiter.settle(joined.closed),
      );
      room.queue.push(waiter);
      if (!room.running) void this.#run(key, room);
    });
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

  /** How many requests of `key` wait in this process's room (some may have just left). */
  waiting(key: string): number {
    if (this.#rooms.size === 0) return 0;
    return this.#rooms.get(key)?.queue.length ?? 0;
  }

  /** A verdict was seen for `key`: look again now. */
  wake(key: string): void {
    this.#rooms.get(key)?.wake();
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
        room.queue = room.queue.filter((w) => !w.done);
        if (room.queue.length === 0) break;
        if (!room.closed || clock.now() - lastPeek >= this.#poll) {
          lastPeek = clock.now();
          const peek = await this.#look(key);
          if (!peek.ok) {
            if (room.closed) {
              // The circuit opened again while the backlog went: release slower next time.
              room.rate = Math.max(MIN_RELEASE_RATE, room.rate / 2);
              room.owed = 0;
            }
            room.closed = false;
            if (peek.retryAfter <= 0) room.queue.find((w) => !w.done)?.settle(true);
            await this.#sleep(
              room,
              peek.retryAfter > 0 ? Math.min(peek.retryAfter, this.#poll) : this.#poll,
            );
            continue;
          }
          if (!room.closed) {
            room.closed = true;
            room.since = clock.now();
            tokens = 1;
            tokensAt = clock.now();
          }
        }
        const now = clock.now();
        tokens += ((now - tokensAt) * room.rate) / 1000;
        tokensAt = now;
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
      if (room.queue.length === 0) this.#rooms.delete(key);
      else void this.#run(key, room);
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

  #sleep(room: Room, ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const cancel = startTimer(this.#clock, ms, () => {
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
