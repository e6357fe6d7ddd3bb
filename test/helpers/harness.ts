import { createFetch, type StaunchOptions } from '../../src/index.js';
import { type FakeClock, fakeClock } from './clock.js';
import { trackedFetch } from './server.js';

/**
 * A client on a fake clock that advances by itself whenever no attempt is in
 * flight: backoff sleeps pass at once and are logged in `clock.sleeps`, while
 * an attempt's own deadline only moves when the test advances the clock.
 */
export function client(
  options: Omit<StaunchOptions, 'clock' | 'fetch'> = {},
  extra: { transport?: typeof fetch; hold?: () => boolean } = {},
) {
  const clock: FakeClock = fakeClock();
  const tracked = trackedFetch(extra.transport);
  const { hold } = extra;
  const stop = clock.autoAdvance(() => tracked.idle() && !hold?.());
  const fetch = createFetch({ random: () => 0.5, ...options, fetch: tracked.fetch, clock });
  return { fetch, clock, calls: tracked.calls, stop };
}

/** A response's status, once its body is read to the end. */
export async function drain(p: Promise<Response>): Promise<number> {
  const r = await p;
  await r.arrayBuffer();
  return r.status;
}

/** Backoff and pacing sleeps (attempt deadlines are the long ones). */
export function waits(clock: FakeClock, attemptTimeout = 60_000): number[] {
  return clock.sleeps.filter((ms) => ms !== attemptTimeout);
}

/** How a promise settled, readable at any time without awaiting it. */
export function settled<T>(promise: Promise<T>) {
  const state: { done: boolean; value?: T; error?: unknown } = { done: false };
  promise.then(
    (value) => Object.assign(state, { done: true, value }),
    (error: unknown) => Object.assign(state, { done: true, error }),
  );
  return state;
}
