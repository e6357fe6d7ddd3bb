/**
 * The executor: one logical request, many attempts. An adapter hands it an
 * `Exchange` (how to send one attempt, read its response); its loop admits
 * and sends an attempt, learns, decides, then waits or stops (DESIGN.md).
 */
import type { DeadlineExceededError } from '../errors.js';
import type { ExecutorOptions } from '../options.js';
import { admit, type Gate, OPEN_GATE } from '../policy/gate.js';
import { LatencyTracker } from '../policy/hedge/latency.js';
import { hedged } from '../policy/hedge/round.js';
import { isPromiseLike } from '../policy/store-call.js';
import type { Exchange, FirstSink, FirstTicket, LogicalRequest, Outcome } from '../request.js';
import { decideNext, type Lesson } from '../retry/decide.js';
import { responsePacing } from '../retry/server-delay.js';
import { type Failure, Flight, type Setup } from './flight.js';
import { learn } from './learn.js';
import { race } from './race.js';
import { retryAfter } from './wait.js';

export type { ExecutorOptions } from '../options.js';
export type { Exchange, FirstSink, FirstTicket, LogicalRequest, Outcome } from '../request.js';

export class Executor {
  readonly #setup: Setup;

  constructor(options: ExecutorOptions) {
    const p = options.policies;
    const any = p && (p.breaker || p.budget || p.limiter || p.concurrency || p.hold);
    const pacing = responsePacing(options.pacing);
    const latency = new LatencyTracker();
    this.#setup = { ...options, policies: any ? p : undefined, pacing, latency };
  }

  /** The clock deadlines and waits run on (an adapter arms attempt 1's deadline on it: {@link first}). */
  get clock(): Setup['clock'] {
    return this.#setup.clock;
  }

  /** Runs `request` through `exchange` until it succeeds, gives up or runs out of time. */
  run<R>(request: LogicalRequest, exchange: Exchange<R>): Promise<R> {
    return this.#loop(new Flight(this.#setup, request, exchange), undefined, undefined);
  }

  /**
   * Attempt 1 for an adapter that sends it itself (staunch/undici), admitted
   * as {@link run} would: its ticket when it may leave now (the adapter sends
   * it, ends it after `ticket.limit` ms with {@link firstDeadline}, hands its
   * outcome to {@link firstDone}); else `undefined`, and it runs here, ending
   * in `sink`. `key`: the policy key, if the adapter has it.
   */
  first<R>(
    request: LogicalRequest,
    exchange: Exchange<R>,
    sink: FirstSink<R>,
    key?: string,
  ): FirstTicket | undefined {
    // One reading of the clock: begun, admitted and left at the same instant when nothing waits.
    const now = this.#setup.clock.now();
    const flight = new Flight(this.#setup, request, exchange, key, now);
    try {
      const gate = this.#admit(flight, now);
      // A hedged request races its attempts in the loop: the adapter sends none of them itself.
      if (!isPromiseLike(gate) && request.hedge === undefined) {
        flight.leave(gate, now);
        return flight;
      }
      this.#loop(flight, gate, undefined).then(sink.resolve.bind(sink), sink.reject.bind(sink));
    } catch (error) {
      sink.reject(flight.failed(error));
    }
    return undefined;
  }

  /**
   * The adapter's attempt 1 ended with `outcome`. `true`: the adapter hands
   * the response to the caller now (policies and listeners told). `false`:
   * the request goes on here, ending in `sink`.
   */
  firstDone<R>(ticket: FirstTicket, outcome: Outcome<R>, sink: FirstSink<R>): boolean {
    const flight = ticket as Flight<R>;
    let lesson: ReturnType<typeof learn>;
    try {
      lesson = learn(flight, flight, outcome);
    } catch (error) {
      sink.reject(flight.failed(error));
      return false;
    }
    if (lesson === undefined) {
      flight.done((outcome as { response: R }).response);
      return true;
    }
    const rest = this.#loop(flight, undefined, { outcome, lesson });
    rest.then(sink.resolve.bind(sink), sink.reject.bind(sink));
    return false;
  }

  /** The error that ends an adapter's attempt 1 when its `limit` has passed. */
  firstDeadline(ticket: FirstTicket): DeadlineExceededError {
    return (ticket as Flight<unknown>).expired();
  }

  /**
   * The loop: admit and send an attempt, learn, decide; then hand back, stop,
   * or wait and go again. {@link first} enters it with attempt 1's admission
   * under way or its `failed` outcome. Every end goes through the flight.
   */
  async #loop<R>(
    flight: Flight<R>,
    admitting: Gate | Promise<Gate> | undefined,
    failed: Failure<R> | undefined,
  ): Promise<R> {
    try {
      for (;;) {
        if (failed === undefined) {
          const admitted = admitting ?? this.#admit(flight);
          admitting = undefined;
          const gate = isPromiseLike(admitted) ? await admitted : admitted;
          flight.leave(gate, flight.clock.now());
          let outcome: Outcome<R>;
          let lesson: Lesson | undefined;
          if (flight.request.hedge === undefined) {
            outcome = await race(flight);
            lesson = learn(flight, flight, outcome);
          } else ({ outcome, lesson } = await hedged(flight));
          if (lesson === undefined)
            return flight.handOver(outcome as Extract<Outcome<R>, { ok: true }>);
          failed = { outcome, lesson };
        }
        const decision = decideNext(flight, failed.lesson);
        if (decision.action === 'done') return flight.stop(failed);
        if (decision.action === 'give-up')
          return flight.stop(failed, decision.reason, decision.delay);
        const refused = await retryAfter(flight, decision, failed);
        if (refused !== undefined) return flight.stop(failed, refused);
        flight.attempt++;
        failed = undefined;
      }
    } catch (error) {
      throw flight.failed(error);
    }
  }

  /** Asks the policies to admit the flight's next attempt (attempt 1 credits the budget: `admit`). */
  #admit(flight: Flight<unknown>, now?: number): Gate | Promise<Gate> {
    flight.request.signal?.throwIfAborted();
    const { policies } = this.#setup;
    return policies === undefined ? OPEN_GATE : admit(flight, policies, now);
  }
}
