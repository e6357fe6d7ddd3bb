/**
 * One attempt raced against its deadline and the caller's signal: settled once, by the first
 * of the three, even if the transport ignores its signal; a response after that is released.
 */
import { noop } from '../internal/clock.js';
import { type Deadline, startDeadline, startSteadyDeadline } from '../internal/deadlines.js';
import { linkSignal } from '../internal/signals.js';
import { AbortToken } from '../internal/token.js';
import type { Sent } from '../policy/gate.js';
import type { Outcome } from '../request.js';
import type { Flight } from './flight.js';

/** Sends `flight`'s attempt `sent` (admitted: `Flight.leave`); resolves with how it ended. */
export function race<R>(flight: Flight<R>, sent: Sent = flight): Promise<Outcome<R>> {
  return new Promise((resolve) => new Race(flight, sent, resolve).start());
}

/** {@link race}, and how to abort that attempt alone (a hedge's loser: policy/hedge/round.ts). */
export function raceAbortable<R>(
  flight: Flight<R>,
  sent: Sent,
  settle: (outcome: Outcome<R>) => void,
): (reason: unknown) => void {
  const one = new Race(flight, sent, settle);
  one.start();
  return one.abort;
}

class Race<R> {
  readonly #flight: Flight<R>;
  readonly #sent: Sent;
  // A token when the transport reads its signal only as staunch's own code does (token.ts).
  readonly #controller: AbortController | AbortToken;
  /** Dropped once settled: the caller's signal may stay linked to `abort` while the body is read. */
  #settle: ((outcome: Outcome<R>) => void) | undefined;
  #deadline: Deadline | undefined;
  #unlink = noop;

  constructor(flight: Flight<R>, sent: Sent, settle: (outcome: Outcome<R>) => void) {
    this.#flight = flight;
    this.#sent = sent;
    this.#settle = settle;
    const token = flight.exchange.tokenSignal === true;
    this.#controller = token ? new AbortToken() : new AbortController();
  }

  start(): void {
    const { exchange, request, clock } = this.#flight;
    const { limit, attempt } = this.#sent;
    if (request.signal !== undefined) this.#unlink = linkSignal(request.signal, this.abort);
    if (Number.isFinite(limit)) {
      const start = exchange.steadyDeadlines === true ? startSteadyDeadline : startDeadline;
      this.#deadline = start(clock, limit, this);
    }
    let answer: Promise<R>;
    try {
      answer = exchange.send(this.#controller.signal, attempt, limit);
    } catch (error) {
      answer = Promise.reject(error);
    }
    answer.then(this.#ok, this.#fail);
  }

  /** The attempt's deadline fired (the deadline list calls it). */
  onDeadline(): void {
    this.abort(this.#flight.expired(this.#sent));
  }

  /** The caller's abort or the deadline; once a response was handed back, it only cancels the body. */
  readonly abort = (reason: unknown): void => {
    this.#controller.abort(reason);
    this.#fail(reason);
  };

  readonly #ok = (response: R): void => {
    if (this.#settle === undefined) {
      void this.#flight.exchange.discard(response, Promise.resolve()).catch(noop);
    } else this.#end({ ok: true, response, unlink: this.#unlink });
  };

  readonly #fail = (error: unknown): void => {
    if (this.#settle === undefined) return;
    this.#unlink();
    this.#end({ ok: false, error });
  };

  #end(outcome: Outcome<R>): void {
    const settle = this.#settle!;
    this.#settle = undefined;
    this.#deadline?.cancel();
    settle(outcome);
  }
}
