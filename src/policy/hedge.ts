/**
 * Hedged requests, the policy side: how long to wait before a hedge (a fixed
 * delay, or a percentile of the key's observed latency) and whether one may
 * leave now. A hedge never waits: no budget token now, a paced key, an open
 * or half-open circuit, a full concurrency limit or a hold, and there is no
 * hedge. The executor's side is `executor/hedge.ts`.
 */
import { noop } from '../internal/clock.js';
import { LastMap } from '../internal/last-map.js';
import type { ResolvedHedgeOptions } from '../options.js';
import type { BreakerAdmission } from './breaker/breaker.js';
import { type AdmitContext, askHold, feedback, type Gate, OPEN_GATE } from './gate.js';
import type { Policies } from './policies.js';
import { isPromiseLike } from './store-call.js';

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

/** ms to wait for a response before hedging `key`; `undefined`: no hedge (too few samples). */
export function hedgeDelay(
  hedge: ResolvedHedgeOptions,
  tracker: LatencyTracker,
  key: string,
): number | undefined {
  if (hedge.delay !== 'auto') return hedge.delay;
  const observed = tracker.percentile(key, hedge.percentile);
  return observed === undefined ? undefined : Math.max(hedge.minDelay, Math.ceil(observed));
}

/**
 * Whether the policies let a hedge of `ctx` leave now, without waiting, and
 * the gate it leaves with: the limiter not pacing the key, no queue for a
 * concurrency slot, no hold, a retry budget token taken at once, a free slot,
 * a closed circuit. `undefined`: no hedge. `lease`: the hedge's attempt
 * deadline, for the breaker.
 */
export async function admitHedge(
  ctx: AdmitContext,
  policies: Policies | undefined,
  lease: number,
): Promise<Gate | undefined> {
  if (policies === undefined) return OPEN_GATE;
  const { key, clock } = ctx;
  const { breaker, limiter, concurrency, budget } = policies;
  if (breaker?.refusing(key) === true || limiter?.active(key) === true) return undefined;
  if ((concurrency?.queued(key) ?? 0) > 0 || askHold(ctx, policies) > 0) return undefined;
  if (budget !== undefined && !(await budget.tryWithdraw(key).catch(() => false))) {
    return undefined;
  }
  let release = noop;
  if (concurrency !== undefined) {
    const slot = await concurrency.acquire(key, 0);
    if (!slot.ok) return undefined;
    release = slot.release;
  }
  if (limiter !== undefined && !limiter.pass(key, clock.now())) {
    release();
    return undefined;
  }
  if (breaker === undefined) return { release, ticket: undefined };
  let admission: BreakerAdmission;
  try {
    const pending = breaker.admit(key, lease, 0, clock.now(), 0);
    admission = isPromiseLike(pending) ? await pending : pending;
  } catch {
    release();
    return undefined;
  }
  if (admission.ok && admission.ticket.probe === null) return { release, ticket: admission.ticket };
  release();
  // Half-open: the probe is not a hedge's to take; it is handed back.
  if (admission.ok)
    feedback(policies, key, { release, ticket: admission.ticket }, CANCELLED, clock.now());
  return undefined;
}

/** How a probe a hedge was given and did not use counts: as cancelled. */
const CANCELLED = { sentAt: 0, notTheUpstream: true, error: undefined } as const;
