/**
 * A hedged round (docs/hedging.md): the attempt that left, and while none has
 * answered, a hedge of it every `delay` ms, `hedge.max` of them at most beside
 * it, each admitted without waiting (`admit.ts`). The first response to
 * hand back wins and the others are aborted. A final outcome (one the retry
 * table does not retry) ends the round too; a failure worth a retry while a
 * sibling is in flight waits for that sibling, and the round's failure is the
 * last one.
 */
import { type AttemptEvent, emit } from '../../events.js';
import type { AttemptState, Flight } from '../../executor/flight.js';
import { learn } from '../../executor/learn.js';
import { race, raceAbortable } from '../../executor/race.js';
import type { Lesson, Setup } from '../../executor/types.js';
import { next } from '../../executor/wait.js';
import { noop } from '../../internal/clock.js';
import type { Outcome } from '../../request.js';
import { errorCode } from '../../retry/classify.js';
import { feedback } from '../gate.js';
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
export async function hedged<R>(setup: Setup, flight: Flight<R>): Promise<Round<R>> {
  const { hedge, replayable, retry } = flight.request;
  flight.won = undefined;
  const delay =
    !replayable || flight.sent >= retry.attempts
      ? undefined
      : hedgeDelay(hedge!, setup.latency, flight.key);
  if (delay === undefined || !(delay < flight.limit)) {
    const outcome = await race(flight);
    return { outcome, lesson: learn(setup, flight, outcome) };
  }
  return new Promise((resolve, reject) => {
    new Hedging(setup, flight, delay, resolve, reject).start();
  });
}

class Hedging<R> {
  /** The attempts in flight, and how to abort each. */
  readonly #live = new Map<AttemptState, (reason: unknown) => void>();
  #cancelTimer = noop;
  #over = false;
  /** A hedge on an automatic delay left in this round: how the round ends teaches the tracker. */
  #hedged = false;

  constructor(
    readonly setup: Setup,
    readonly flight: Flight<R>,
    readonly delay: number,
    readonly resolve: (round: Round<R>) => void,
    readonly reject: (error: unknown) => void,
  ) {}

  /** Sends the attempt under way (it has left) and arms the next hedge. */
  start(): void {
    const state = this.flight.current();
    const abort = raceAbortable(this.flight, (outcome) => this.#settled(state, outcome));
    this.#live.set(state, abort);
    const { hedge, retry } = this.flight.request;
    if (this.#live.size <= hedge!.max && this.flight.sent < retry.attempts) {
      // A sleep, not a timer: its promise keeps the caller's async context (OTel's spans).
      const cancel = new AbortController();
      this.setup.clock.sleep(this.delay, cancel.signal).then(this.#fire, noop);
      this.#cancelTimer = () => cancel.abort();
    }
  }

  readonly #fire = (): void => {
    this.#hedge().catch(this.#fail);
  };

  /** A hedge, if the request may still be sent again and the policies let one leave now. */
  async #hedge(): Promise<void> {
    const { flight, setup } = this;
    const { clock } = setup;
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
    flight.attempt = flight.sent + 1;
    flight.leave(gate, now, true);
    this.#hedged = auto;
    this.start();
  }

  /** One attempt ended: learnt from as the loop would, then the round goes on or ends. */
  #settled(state: AttemptState, outcome: Outcome<R>): void {
    if (this.#over || !this.#live.delete(state)) return;
    const { flight, setup } = this;
    flight.resume(state);
    let lesson: Lesson | undefined;
    try {
      lesson = learn(setup, flight, outcome);
    } catch (error) {
      this.#fail(error);
      return;
    }
    const last = this.#live.size === 0;
    if (lesson === undefined || last || next(setup, flight, lesson).action === 'done') {
      this.#end(LOST);
      flight.won = outcome.ok ? state.attempt : undefined;
      if (this.#hedged) setup.latency.recordRound(flight.key, state.hedge);
      // A failure goes on to the retry decision as the last attempt sent.
      if (lesson !== undefined) flight.attempt = flight.sent;
      this.resolve({ outcome, lesson });
      return;
    }
    // Worth a retry, and a sibling is still in flight: that sibling is the retry.
    if (outcome.ok) {
      outcome.unlink();
      flight.exchange.discard(outcome.response, Promise.resolve()).catch(noop);
    }
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
    const { flight, setup } = this;
    const now = setup.clock.now();
    for (const [state, abort] of this.#live) {
      abort(reason);
      this.#drop(state.gate, now, state.started);
      if (setup.on.attempt === undefined) continue;
      const { method } = flight.request;
      const duration = now - state.started;
      const event: AttemptEvent = { method, url: flight.url(), attempt: state.attempt, duration };
      if (state.hedge) event.hedge = true;
      if (reason === LOST) event.lost = true;
      else {
        const code = errorCode(reason);
        if (code !== undefined) event.code = code;
      }
      emit(setup.on.attempt, event);
    }
    this.#live.clear();
  }

  /** An attempt's gate given back unused or cancelled: the breaker counts it as neither. */
  #drop(gate: AttemptState['gate'], now: number, sentAt = now): void {
    gate.release();
    const { policies } = this.setup;
    if (policies === undefined) return;
    feedback(policies, this.flight.key, gate, { sentAt, notTheUpstream: true }, now);
  }
}
