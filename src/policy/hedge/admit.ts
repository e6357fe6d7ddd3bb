/**
 * Whether and when a hedge leaves: the delay (fixed, or a percentile of the
 * key's observed latency) and the admission of a hedge now. A hedge never
 * waits: no budget token now, a paced key, an open or half-open circuit, a
 * full concurrency limit or a hold, and there is no hedge. The round that
 * sends them is `round.ts`.
 */
import { noop } from '../../internal/clock.js';
import type { ResolvedHedgeOptions } from '../../options.js';
import type { BreakerAdmission } from '../breaker/breaker.js';
import { type AdmitContext, askHold, feedback, type Gate, OPEN_GATE } from '../gate.js';
import type { Policies } from '../policies.js';
import { isPromiseLike } from '../store-call.js';
import type { LatencyTracker } from './latency.js';

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
