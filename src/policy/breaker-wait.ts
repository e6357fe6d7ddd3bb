/**
 * Where requests wait on an open circuit (issue 9: an open circuit is a
 * not-sent outcome, not a verdict on the request). One room per key and
 * process: the room, not each waiter, asks the store how the circuit stands,
 * once per poll, so a thousand waiters cost one store call per poll.
 *
 * - closed: every waiter goes (each then passes the rate limiter again, so
 *   the backlog does not come back as one burst of unpaced sends);
 * - a probe may go: the head of the queue goes, to become the probe;
 * - open, or the probes out: wait, at most until the break ends or a poll.
 *
 * A verdict seen by this process (its own probe's outcome) wakes the room at
 * once; other processes' verdicts are seen at the next poll.
 */
import { type Clock, noop, startTimer } from '../internal/clock.js';
import { linkSignal } from '../internal/signals.js';
import { isPromiseLike } from './store-call.js';

/** What a peek at the circuit answers: `ok` = closed; `retryAfter: 0` = a probe may go. */
export interface BreakerPeek {
  ok: boolean;
  retryAfter: number;
}

/** Looks at the circuit of `key`, counting its waiters as waiting for `waitMs`. */
export type Peek = (key: string, waitMs: number) => BreakerPeek | Promise<BreakerPeek>;

interface Waiter {
  readonly deadline: number;
  done: boolean;
  settle(go: boolean): void;
}

interface Room {
  queue: Waiter[];
  running: boolean;
  /** Ends the room's current sleep early. */
  wake: () => void;
}

export class BreakerWaitingRoom {
  readonly #clock: Clock;
  readonly #poll: number;
  readonly #peek: Peek;
  readonly #rooms = new Map<string, Room>();

  constructor(clock: Clock, probeInterval: number, peek: Peek) {
    this.#clock = clock;
    // Often enough to see another process's verdict soon after it lands.
    this.#poll = Math.max(20, Math.min(250, probeInterval / 4));
    this.#peek = peek;
  }

  /** How long a waiter counts as waiting in the store: renewed by every poll before it lapses. */
  get lease(): number {
    return 2 * this.#poll + 1;
  }

  wait(key: string, maxWait: number, signal?: AbortSignal): Promise<boolean> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<boolean>((resolve, reject) => {
      let unlink = noop;
      let cancelTimer = noop;
      const waiter: Waiter = {
        deadline: this.#clock.now() + maxWait,
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
      cancelTimer = startTimer(this.#clock, Math.max(0, maxWait), () => waiter.settle(false));
      let room = this.#rooms.get(key);
      if (room === undefined) {
        room = { queue: [], running: false, wake: noop };
        this.#rooms.set(key, room);
      }
      room.queue.push(waiter);
      if (!room.running) void this.#run(key, room);
    });
  }

  /** A verdict was seen for `key`: look again now. */
  wake(key: string): void {
    this.#rooms.get(key)?.wake();
  }

  async #run(key: string, room: Room): Promise<void> {
    room.running = true;
    try {
      for (;;) {
        room.queue = room.queue.filter((w) => !w.done);
        if (room.queue.length === 0) break;
        const now = this.#clock.now();
        let latest = now;
        for (const w of room.queue) latest = Math.max(latest, w.deadline);
        // Counted as waiting until the next poll has had time to renew it.
        const waitMs = Math.min(latest - now, this.lease);
        let peek: BreakerPeek;
        try {
          const answer = this.#peek(key, Math.max(1, waitMs));
          peek = isPromiseLike(answer) ? await answer : answer;
        } catch {
          // The store failed: let the waiters try, the admission decides.
          peek = { ok: true, retryAfter: 0 };
        }
        if (peek.ok) {
          for (const w of room.queue) w.settle(true);
          room.queue = [];
          break;
        }
        if (peek.retryAfter <= 0) room.queue.find((w) => !w.done)?.settle(true);
        const pause = peek.retryAfter > 0 ? Math.min(peek.retryAfter, this.#poll) : this.#poll;
        await this.#sleep(room, pause);
      }
    } finally {
      room.running = false;
      room.wake = noop;
      if (room.queue.length === 0) this.#rooms.delete(key);
      else void this.#run(key, room);
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
