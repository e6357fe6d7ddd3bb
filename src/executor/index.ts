/**
 * The executor: one logical request, many attempts. It knows nothing of
 * fetch or undici; an adapter hands it an `Exchange` (how to send one attempt
 * and read its response) and it decides, per DESIGN.md, whether and when to
 * send again, inside the deadline, and what to hand back. The loop is
 * {@link Executor.run}'s: attempt, learn, decide, then wait or stop.
 */
import { emit } from '../events.js';
import { admit, type Gate, OPEN_GATE } from '../policy/gate.js';
import { ignoreRejection, isPromiseLike } from '../policy/store-call.js';
import type { Exchange, LogicalRequest } from '../request.js';
import { responsePacing } from '../retry/server-delay.js';
import { Flight } from './flight.js';
import { learn } from './learn.js';
import { race } from './race.js';
import type { ExecutorOptions, Failure, FirstSink, FirstTicket, Outcome, Setup } from './types.js';
import { next, retryAfter } from './wait.js';

export type { Exchange, LogicalRequest } from '../request.js';
export type { ExecutorOptions, FirstSink, FirstTicket, Outcome } from './types.js';

export class Executor {
  readonly #setup: Setup;

  constructor(options: ExecutorOptions) {
    const p = options.policies;
    this.#setup = Object.freeze({
      clock: options.clock,
      random: options.random,
      on: options.on,
      policies:
        p && (p.breaker || p.budget || p.limiter || p.concurrency || p.hold) ? p : undefined,
      classify: options.classify,
      pacing: responsePacing(options.pacing),
    });
  }

  /** The clock deadlines and waits run on (an adapter arms attempt 1's deadline on it: {@link first}). */
  get clock(): Setup['clock'] {
    return this.#setup.clock;
  }

  /** Runs `request` through `exchange` until it succeeds, gives up or runs out of time. */
  run<R>(request: LogicalRequest, exchange: Exchange<R>): Promise<R> {
    return this.#loop(this.#flight(request, exchange), undefined, undefined);
  }

  /**
   * Attempt 1 for an adapter that sends it itself, on a path of its own
   * (staunch/undici: a handler that hands a success straight to the
   * caller's). Admits it as {@link run} would and, when it may leave at
   * once, returns its ticket: the adapter sends it, aborts it after
   * `ticket.limit` ms with {@link firstDeadline}'s error, and hands its
   * outcome to {@link firstDone}. Otherwise (an admission that waits or
   * refuses, no time left) returns `undefined`, and the request runs here,
   * ending in `sink`. `key`: the policy key, if the adapter asked already.
   */
  first<R>(
    request: LogicalRequest,
    exchange: Exchange<R>,
    sink: FirstSink<R>,
    key?: string,
  ): FirstTicket | undefined {
    const flight = this.#flight(request, exchange, key);
    try {
      const gate = this.#admit(flight);
      if (!isPromiseLike(gate)) {
        this.#leave(flight, gate);
        return flight;
      }
      this.#loop(flight, gate, undefined).then(
        (response) => sink.resolve(response),
        (error: unknown) => sink.reject(error),
      );
    } catch (error) {
      sink.reject(flight.failed(error));
    }
    return undefined;
  }

  /**
   * The adapter's attempt 1 ended with `outcome`. `true`: a response to hand
   * to the caller now (the policies and listeners have been told, as for any
   * attempt); the adapter does that itself. `false`: the request goes on here
   * (retries, or the end of it), ending in `sink`.
   */
  firstDone<R>(ticket: FirstTicket, outcome: Outcome<R>, sink: FirstSink<R>): boolean {
    const flight = ticket as Flight<R>;
    let lesson: ReturnType<typeof learn>;
    try {
      lesson = learn(this.#setup, flight, outcome);
    } catch (error) {
      sink.reject(flight.failed(error));
      return false;
    }
    if (lesson === undefined) {
      flight.done((outcome as { response: R }).response);
      return true;
    }
    this.#loop(flight, undefined, { outcome, lesson }).then(
      (response) => sink.resolve(response),
      (error: unknown) => sink.reject(error),
    );
    return false;
  }

  /** The error that ends an adapter's attempt 1 when its `limit` has passed. */
  firstDeadline(ticket: FirstTicket): ReturnType<Flight<unknown>['expired']> {
    return (ticket as Flight<unknown>).expired();
  }

  #flight<R>(request: LogicalRequest, exchange: Exchange<R>, key?: string): Flight<R> {
    const { clock, on, policies } = this.#setup;
    return new Flight(request, exchange, clock, on, key ?? policies?.key(request) ?? '');
  }

  /**
   * The loop: admit and send an attempt, learn from it, decide; then hand
   * back, stop, or wait and go again. Entered with attempt 1's admission
   * under way (`admitting`) or its failure (`failed`) from {@link first}.
   * Every end goes through the flight, which says it once.
   */
  async #loop<R>(
    flight: Flight<R>,
    admitting: Promise<Gate> | undefined,
    failed: Failure<R> | undefined,
  ): Promise<R> {
    try {
      for (;;) {
        if (failed === undefined) {
          const admitted = admitting ?? this.#admit(flight);
          admitting = undefined;
          this.#leave(flight, isPromiseLike(admitted) ? await admitted : admitted);
          const outcome = await race(flight);
          const lesson = learn(this.#setup, flight, outcome);
          if (lesson === undefined)
            return flight.handOver(outcome as { ok: true; response: R; unlink: () => void });
          failed = { outcome, lesson };
        }
        const decision = next(this.#setup, flight, failed.lesson);
        if (decision.action === 'done') return flight.stop(failed);
        if (decision.action === 'give-up')
          return flight.stop(failed, decision.reason, decision.delay);
        const refused = await retryAfter(this.#setup, flight, decision, failed);
        if (refused !== undefined) return flight.stop(failed, refused);
        flight.attempt++;
        failed = undefined;
      }
    } catch (error) {
      throw flight.failed(error);
    }
  }

  /** Asks the policies to admit the flight's next attempt; attempt 1 first earns the budget's credit. */
  #admit(flight: Flight<unknown>): Gate | Promise<Gate> {
    flight.request.signal?.throwIfAborted();
    const policies = this.#setup.policies;
    if (policies === undefined) return OPEN_GATE;
    const now = this.#setup.clock.now();
    if (flight.attempt === 1 && policies.budget !== undefined) {
      try {
        ignoreRejection(policies.budget.deposit(flight.key, now));
      } catch {
        // Policies learn on a best-effort basis; the request goes on.
      }
    }
    return admit(flight, policies, now);
  }

  /** An admitted attempt leaves, if the total deadline has not passed: `attemptStart`. */
  #leave(flight: Flight<unknown>, gate: Gate): void {
    const now = this.#setup.clock.now();
    if (flight.deadline - now <= 0) {
      gate.release();
      throw flight.outOfTime(flight.attempt - 1);
    }
    flight.leave(gate, now);
    const listener = this.#setup.on.attemptStart;
    if (listener === undefined) return;
    emit(listener, { method: flight.request.method, url: flight.url(), attempt: flight.attempt });
  }
}
