/**
 * What hedging learns of a key, in this process: the time to headers of its
 * successes (for `hedge.delay: 'auto'`) and whether its hedges pay. Read by
 * the admission of a hedge (`admit.ts`), fed by the executor (`executor/learn.ts`)
 * and the hedged round (`round.ts`).
 */
import { LastMap } from '../../internal/last-map.js';

/** Successful attempts of a key seen before `delay: 'auto'` hedges it. */
export const HEDGE_MIN_SAMPLES = 20;

/** Latencies kept per key: the most recent ones, a ring. */
const SAMPLES = 200;

/** Keys tracked at most; past it, the tracker starts over. */
const MAX_KEYS = 1024;

/**
 * The hedged rounds of a key whose outcome is kept: whether a hedge answered
 * first. Fewer than {@link MIN_WINS} wins among the last {@link ROUNDS}, and
 * hedges are not paying: the key hedges only one round in {@link EXPLORE}
 * that would have hedged, enough to see them pay again.
 */
export const HEDGE_ROUNDS = 20;
const ROUNDS = HEDGE_ROUNDS;
const MIN_WINS = 4;
const EXPLORE = 10;

interface Samples {
  readonly ring: number[];
  next: number;
  /** Samples added since `sorted` was built. */
  fresh: number;
  sorted: number[] | undefined;
  /** The last {@link ROUNDS} hedged rounds, 1 where a hedge won (a ring). */
  readonly rounds: number[];
  nextRound: number;
  /** Rounds that would have hedged while hedges were not paying, since the last one allowed. */
  skipped: number;
}

/**
 * Per policy key, the time to response headers of the last {@link SAMPLES}
 * attempts that succeeded, and its percentiles. In this process only: each
 * process learns its own view of the upstream's latency.
 */
export class LatencyTracker {
  readonly #keys = new LastMap<string, Samples>();

  /** Records an attempt of `key` that succeeded `ms` after it was sent. */
  record(key: string, ms: number): void {
    const s = this.#samples(key);
    if (s.ring.length < SAMPLES) s.ring.push(ms);
    else s.ring[s.next] = ms;
    s.next = (s.next + 1) % SAMPLES;
    s.fresh++;
  }

  /** Records how a round of `key` that sent a hedge ended: `won`, a hedge answered first. */
  recordRound(key: string, won: boolean): void {
    const s = this.#samples(key);
    if (s.rounds.length < ROUNDS) s.rounds.push(won ? 1 : 0);
    else s.rounds[s.nextRound] = won ? 1 : 0;
    s.nextRound = (s.nextRound + 1) % ROUNDS;
  }

  /**
   * Whether a round of `key` whose delay has passed may hedge: yes while its
   * hedges pay (or too few rounds are known to say), else one in {@link EXPLORE}.
   * Where the upstream is slow for everyone (slower under load), the first
   * attempt still answers first, and a hedge only adds to the load.
   */
  mayHedge(key: string): boolean {
    const s = this.#keys.get(key);
    if (s === undefined || s.rounds.length < ROUNDS) return true;
    let wins = 0;
    for (const w of s.rounds) wins += w;
    if (wins >= MIN_WINS) return true;
    if (++s.skipped < EXPLORE) return false;
    s.skipped = 0;
    return true;
  }

  #samples(key: string): Samples {
    let s = this.#keys.get(key);
    if (s === undefined) {
      if (this.#keys.size >= MAX_KEYS) this.#keys.clear();
      s = { ring: [], next: 0, fresh: 0, sorted: undefined, rounds: [], nextRound: 0, skipped: 0 };
      this.#keys.set(key, s);
    }
    return s;
  }

  /** Samples of `key` (at most {@link SAMPLES}). */
  count(key: string): number {
    return this.#keys.get(key)?.ring.length ?? 0;
  }

  /** The `p` percentile (nearest rank) of `key`'s samples; `undefined` below {@link HEDGE_MIN_SAMPLES}. */
  percentile(key: string, p: number): number | undefined {
    const s = this.#keys.get(key);
    if (s === undefined || s.ring.length < HEDGE_MIN_SAMPLES) return undefined;
    // Sorted again only after a tenth of the ring is new: hedging needs no exact tail.
    if (s.sorted === undefined || s.fresh * 10 >= s.ring.length) {
      s.sorted = s.ring.slice().sort((a, b) => a - b);
      s.fresh = 0;
    }
    const sorted = s.sorted;
    const rank = Math.min(sorted.length, Math.max(1, Math.ceil(p * sorted.length)));
    return sorted[rank - 1];
  }
}
