/**
 * A hedged round (docs/hedging.md): the attempt that left, and while none has
 * answered, a hedge of it every `delay` ms, `hedge.max` of them at most beside
 * it, each admitted without waiting (`admit.ts`). The first response to
 * hand back wins and the others are aborted. A final outcome (one the retry
 * table does not retry) ends the round too; a failure worth a retry while a
 * sibling is in flight waits for that sibling, and the round's failure is the
 * last one.
 */
import type { Flight } from '../../executor/flight.js';
import { learn } from '../../executor/learn.js';
import { race, raceAbortable } from '../../executor/race.js';
import { noop } from '../../internal/clock.js';
import type { Outcome } from '../../request.js';
import { errorCode } from '../../retry/classify.js';
import type { Lesson } from '../../retry/decide.js';
import { feedback, type Gate, type Sent } from '../gate.js';
import { admitHedge, hedgeDelay } from './admit.js';

/** How a round ended: a response to hand back (`lesson` undefined), or the failure to decide on. */
export interface Round<R> {
  readonly outcome: Outcome<R>;
  readonly lesson: Lesson | undefined;
}

/** Why a hedge's loser was aborted: another attempt's response won. */
const LOST = new Error('staunch: another hedged attempt won');

/**
 * The round of the attempt that just left `flight`: hedged after the delay
 * (a fixed one, or the key's latency percentile), or that attempt alone when
 * there is no hedge this round (a request neither idempotent nor keyed, no
 * attempt left for one, too few latency samples, a delay past the attempt's
 * own deadline).
 */
export async function hedged<R>(flight: Flight<R>): Promise<Round<R>> {
  const { request, setup } = flight;
  const { hedge, replayable, retry } = request;
  flight.won = undefined;
  const delay =
    !replayable || flight.sent >= retry.attempts
      ? undefined
      : hedgeDelay(hedge!, setup.latency, flight.key);
  if (delay === undefined || !(delay < flight.limit)) {
    const outcome = await race(flight);
    return { outcome, lesson: learn(flight, flight, outcome) };
  }
  return new Promise((resolve, reject) => {
    new Hedging(flight, delay, resolve, reject).start(flight);
  });
}

class Hedging<R> {
  /** The attempts in flight, and how to abort each. */
  readonly #live = new Map<Sent, (reason: unknown) => void>();
  #cancelTimer = noop;
  #over = false;
  /** A hedge on an automatic delay left in this round: how the round ends teaches the tracker. */
  #hedged = false;

  constructor(
    readonly flight: Flight<R>,
    readonly delay: number,
    readonly resolve: (round: Round<R>) => void,
    readonly reject: (error: unknown) => void,
  ) {}

  /** Sends `sent` (it has left) and arms the next hedge. */
  start(sent: Sent): void {
    const abort = raceAbortable(this.flight, sent, (outcome) => this.#settled(sent, outcome));
    this.#live.set(sent, abort);
    const { hedge, retry } = this.flight.request;
    if (this.#live.size <= hedge!.max && this.flight.sent < retry.attempts) {
      // A sleep, not a timer: its promise keeps the caller's async context (OTel's spans).
      const cancel = new AbortController();
      this.flight.clock.sleep(this.delay, cancel.signal).then(this.#fire, noop);
      this.#cancelTimer = () => cancel.abort();
    }
  }

  readonly #fire = (): void => {
    this.#hedge().catch(this.#fail);
  };

  /** A hedge, if the request may still be sent again and the policies let one leave now. */
  async #hedge(): Promise<void> {
    const { flight } = this;
    const { clock, setup } = flight;
    const lease = Math.min(flight.request.timeout.attempt, flight.deadline - clock.now());
    if (this.#over || !(lease > 0) || !flight.exchange.resendable(false)) return;
    const auto = flight.request.hedge!.delay === 'auto';
    if (auto && !setup.latency.mayHedge(flight.key)) return;
    const gate = await admitHedge(flight, setup.policies, lease);
    if (gate === undefined) return;
    const now = clock.now();
    if (this.#over || flight.request.signal?.aborted || !(flight.deadline > now)) {
      this.#drop(gate, now);
      return;
    }
    const sent = flight.leave(gate, now, true);
    this.#hedged = auto;
    this.start(sent);
  }

  /** One attempt ended: learnt from as the loop would, then the round goes on or ends. */
  #settled(sent: Sent, outcome: Outcome<R>): void {
    if (this.#over || !this.#live.delete(sent)) return;
    const { flight } = this;
    let lesson: Lesson | undefined;
    try {
      lesson = learn(flight, sent, outcome);
    } catch (error) {
      this.#fail(error);
      return;
    }
    // A final outcome (the retry table says `never`) ends the round, as the last attempt does.
    if (lesson === undefined || this.#live.size === 0 || lesson.scope === 'never') {
      this.#end(LOST);
      flight.won = outcome.ok ? sent.attempt : undefined;
      if (this.#hedged) flight.setup.latency.recordRound(flight.key, sent.hedge === true);
      // A failure goes on to the retry decision as the last attempt sent.
      if (lesson !== undefined) flight.attempt = flight.sent;
      this.resolve({ outcome, lesson });
      return;
    }
    // Worth a retry, and a sibling is still in flight: that sibling is the retry.
    if (outcome.ok) flight.release(outcome);
  }

  /** The request ends here with `error` (the caller's abort, the total deadline). */
  readonly #fail = (error: unknown): void => {
    if (this.#over) return;
    this.#end(error);
    this.flight.attempt = this.flight.sent;
    this.reject(error);
  };

  /** The round is over: no more hedges, the attempts still in flight aborted with `reason`. */
  #end(reason: unknown): void {
    this.#over = true;
    this.#cancelTimer();
    const now = this.flight.clock.now();
    for (const [sent, abort] of this.#live) {
      abort(reason);
      this.#drop(sent.gate, now, sent.started);
      const lost = reason === LOST || undefined;
      this.flight.onAttempt(sent, now, lost ? { lost } : { code: errorCode(reason) });
    }
    this.#live.clear();
  }

  /** An attempt's gate given back unused or cancelled: the breaker counts it as neither. */
  #drop(gate: Gate, now: number, sentAt = now): void {
    gate.release();
    const { policies } = this.flight.setup;
    if (policies === undefined) return;
    feedback(policies, this.flight.key, gate, { sentAt, notTheUpstream: true }, now);
  }
}
