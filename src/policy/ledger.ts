/**
 * The policies' success path, folded. While a key is quiet (its circuit
 * closed on the memory store with no one waiting on it, its adaptive rate
 * limit not engaged, no concurrency limit and no `hold` hook), all that the
 * policies do for an attempt 1 and for a response below 400 without pacing
 * headers is count: a send for the limiter's meters, the budget's credit
 * and the waiting room's admissions; a success for the breaker's bucket and
 * the limiter's accepted rate. The ledger counts them itself, a branch and
 * an addition a request, and hands the counts over before any other policy
 * call for the key, or when the period it was armed for ends.
 *
 * The counts land where they would have landed one by one: a period never
 * spans one of the policies' own boundaries (a breaker bucket, a meter
 * bucket, the budget's batch, the waiting room's second), and the limiter's
 * short-term rates, which decay continuously, get the sum of each event's
 * weight (`exp(t / RECENT_MS)`, valued at the period's start), read from a
 * table for the system clock's whole milliseconds. The attempt
 * that arms a period is told to the policies, as the first of a bucket
 * must be (its success writes the last bucket's batch). Any write to the
 * memory store, by this client or another sharing it, voids the period: the
 * next attempt takes the full path and arms a new one.
 */
import { noop } from '../internal/clock.js';
import { LastMap } from '../internal/last-map.js';
import { WRITES, type WriteCounting } from '../store/memory.js';
import type { StateStore } from '../store/store.js';
import type { BreakerTicket, CircuitBreaker } from './breaker.js';
import type { RetryBudget } from './budget.js';
import { type RateLimiter, RECENT_MS } from './rate-limiter.js';
import { METER_BUCKET_MS } from './rate-meter.js';
import { ignoreRejection } from './store-call.js';

/** What the ledger needs of a gate (gate.ts's `Gate`, which it does not import: no cycle). */
interface Gate {
  readonly release: () => void;
  readonly ticket: BreakerTicket | undefined;
}

/** The policies it counts for (policies.ts's `Policies`). */
interface Counted {
  readonly breaker: CircuitBreaker | undefined;
  readonly budget: RetryBudget | undefined;
  readonly limiter: RateLimiter | undefined;
}

/**
 * `exp(ms / RECENT_MS)` for every whole millisecond of a period (which ends
 * with the rate meter's bucket, if not before): the limiter's weight of an
 * event `ms` after the period started, without a `Math.exp` a request.
 */
const WEIGHTS: Float64Array = Float64Array.from({ length: METER_BUCKET_MS + 1 }, (_, ms) =>
  Math.exp(ms / RECENT_MS),
);

/** Keys with a ledger before they are all folded and dropped. */
const MAX_LEDGERS = 1024;

/** The gate of a quiet key's attempts: it names the ledger that counts their successes. */
export interface LedgerGate extends Gate {
  readonly ledger: Ledger;
}

/** One key's counts of the period in progress. */
export class Ledger {
  readonly key: string;
  /** Clock time the period started: the limiter's short-term rates are valued at it. */
  from = 0;
  /** Clock time the period ends; `-Infinity`: none armed. */
  until: number = Number.NEGATIVE_INFINITY;
  /** The memory store's write count when armed. */
  version = 0;
  /** The gate of this period's attempts (the same object while the breaker's ticket is). */
  gate: LedgerGate | undefined;
  sends = 0;
  /** `Σ exp((t − from) / RECENT_MS)` over the sends' times. */
  sendWeight = 0;
  lastSend = 0;
  oks = 0;
  okWeight = 0;
  lastOk = 0;

  constructor(key: string) {
    this.key = key;
  }

  /** `exp((now − from) / RECENT_MS)`: from a table for a whole millisecond (the system clock's). */
  weigh(now: number): number {
    const ms = now - this.from;
    return ms >= 0 && ms < WEIGHTS.length && ms === Math.floor(ms)
      ? WEIGHTS[ms]!
      : Math.exp(ms / RECENT_MS);
  }
}

/** The quiet ledgers of one client's policies. */
export class Ledgers {
  readonly #policies: Counted;
  readonly #ledgers = new LastMap<string, Ledger>();
  /** The memory store's write count; a constant for another store (then the breaker is off). */
  readonly #writes: { n: number };

  constructor(policies: Counted, store: StateStore) {
    this.#policies = policies;
    this.#writes = (store as Partial<WriteCounting>)[WRITES] ?? { n: 0 };
  }

  /**
   * Attempt 1 of `key` at `now`: counted, and the gate it goes with, while a
   * period is armed; otherwise what was counted is handed over, and
   * `undefined` says: take the full path, then {@link arm}.
   */
  send(key: string, now: number): LedgerGate | undefined {
    const ledger = this.#ledgers.get(key);
    if (ledger === undefined) return undefined;
    if (this.#open(ledger, now)) {
      ledger.sends++;
      ledger.sendWeight += ledger.weigh(now);
      ledger.lastSend = now;
      return ledger.gate;
    }
    this.#settle(ledger, true);
    return undefined;
  }

  /**
   * A response below 400 without pacing headers, at `now`, of an attempt
   * that went with `gate`: `true` when the ledger counted it; `false`: tell
   * the policies (`feedback`).
   */
  succeeded(gate: LedgerGate, now: number): boolean {
    const ledger = gate.ledger;
    if (ledger.gate !== gate || !this.#open(ledger, now)) return false;
    ledger.oks++;
    ledger.okWeight += ledger.weigh(now);
    ledger.lastOk = now;
    return true;
  }

  /** Whether `ledger`'s period holds `now`, no store write since it was armed. */
  #open(ledger: Ledger, now: number): boolean {
    return now < ledger.until && now >= ledger.from && this.#writes.n === ledger.version;
  }

  /**
   * Before any other policy call for `key`: what was counted is handed over.
   * `end`: the period ends too (anything but a success without pacing
   * headers may change what the policies would do).
   */
  settle(key: string, end: boolean): void {
    const ledger = this.#ledgers.get(key);
    if (ledger !== undefined) this.#settle(ledger, end);
  }

  /**
   * Attempt 1 of `key` was admitted on the full path with `gate` at `now`:
   * arms a period for the attempts after it when every policy is quiet for
   * the key. This attempt keeps its own gate: its success is told to the
   * policies, as the first of a period would have been one by one.
   */
  arm(key: string, gate: Gate, now: number): void {
    if (gate.release !== noop) return;
    const { breaker, budget, limiter } = this.#policies;
    let until = Number.POSITIVE_INFINITY;
    if (breaker !== undefined) until = Math.min(until, breaker.quietUntil(key, gate.ticket, now));
    if (budget !== undefined) until = Math.min(until, budget.quietUntil(key));
    if (limiter !== undefined) until = Math.min(until, limiter.quietUntil(key, now));
    if (!(until > now)) return;
    let ledger = this.#ledgers.get(key);
    if (ledger === undefined) {
      if (this.#ledgers.size >= MAX_LEDGERS) this.#clear();
      ledger = new Ledger(key);
      this.#ledgers.set(key, ledger);
    } else this.#settle(ledger, true);
    ledger.from = now;
    ledger.until = until;
    ledger.version = this.#writes.n;
    if (ledger.gate === undefined || ledger.gate.ticket !== gate.ticket) {
      ledger.gate = Object.freeze({ release: noop, ticket: gate.ticket, ledger });
    }
  }

  /** Hands every ledger over and forgets them (many keys: bounded memory). */
  #clear(): void {
    for (const ledger of this.#ledgers.values()) this.#settle(ledger, true);
    this.#ledgers.clear();
  }

  /** Hands `ledger`'s counts to the policies; `end`: its period too. Never throws. */
  #settle(ledger: Ledger, end: boolean): void {
    if (end) ledger.until = Number.NEGATIVE_INFINITY;
    const { sends, oks } = ledger;
    if (sends === 0 && oks === 0) return;
    const { key, from } = ledger;
    const { breaker, budget, limiter } = this.#policies;
    const ticket = ledger.gate?.ticket;
    const { sendWeight, lastSend, okWeight, lastOk } = ledger;
    ledger.sends = ledger.oks = ledger.sendWeight = ledger.okWeight = 0;
    try {
      if (sends > 0) {
        if (budget !== undefined) ignoreRejection(budget.quietDeposit(key, sends, lastSend));
        limiter?.quietSent(key, sends, sendWeight, from, lastSend);
        breaker?.quietAdmitted(key, sends, lastSend);
      }
      if (oks > 0) {
        if (breaker !== undefined && ticket !== undefined) {
          ignoreRejection(breaker.quietSucceeded(key, ticket, oks, lastOk));
        }
        limiter?.quietAccepted(key, oks, okWeight, from, lastOk);
      }
    } catch {
      // Policies learn on a best-effort basis, as every policy write.
    }
  }
}
