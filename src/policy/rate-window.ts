/**
 * Where a fixed-window quota resets, learned from its remaining counter.
 * `RateLimit-Reset` and `Retry-After` come in whole seconds: a spent window
 * said to reset "in 1 s" may reset in 10 ms. Pausing the full second idled
 * the key for most of the next window at every spend (issue 9: 0.86 of the
 * optimum's goodput under a 2 000-per-second window). A counter that goes
 * up between two requests says a window began between their sends; windows
 * of whole seconds then begin at that instant modulo 1 s, so the reset the
 * header rounded is the one such instant within its last second.
 * docs/policies.md, "A spent quota", has the figures.
 */

/** What this process saw of one key's quota counter. Times are clock ms. */
export interface QuotaWindow {
  /** The remaining count on the response to the latest request sent, or -1 before any. */
  remaining: number;
  /** When that request was sent. */
  sentAt: number;
  /** A window began in (`begin − width`, `begin`]; `NaN` before any was seen. */
  begin: number;
  width: number;
}

/** A window length, and a reset given in whole seconds, are multiples of this (ms). */
const SECOND = 1000;

/** Nothing seen yet. */
export function quotaWindow(): QuotaWindow {
  return { remaining: -1, sentAt: Number.NEGATIVE_INFINITY, begin: Number.NaN, width: 0 };
}

/** `x mod SECOND`, in [0, SECOND). */
function phase(x: number): number {
  return x - Math.floor(x / SECOND) * SECOND;
}

/** Whether (`from`, `to`] holds an instant that is `at` modulo a second. */
function holds(from: number, to: number, at: number): boolean {
  if (to - from >= SECOND) return true;
  return to - phase(to - at) > from;
}

/**
 * Notes the counter `remaining` on the response to a request sent at
 * `sentAt`. A count above the one of the request sent before it means a
 * window began between the two sends. The narrowest such bracket is kept
 * while later ones agree with it (modulo a second); one that does not
 * says the server's windows moved, and replaces it.
 */
export function windowSeen(w: QuotaWindow, remaining: number, sentAt: number): void {
  if (!(sentAt > w.sentAt)) return; // an older request's answer, overtaken
  if (w.remaining >= 0 && remaining > w.remaining) {
    const width = sentAt - w.sentAt;
    const agrees = !Number.isNaN(w.begin) && holds(w.sentAt, sentAt, w.begin);
    if (!agrees || width <= w.width) {
      w.begin = sentAt;
      w.width = width;
    }
  }
  w.remaining = remaining;
  w.sentAt = sentAt;
}

/**
 * When a spent quota resets, told at `now` to reset in `reset` ms: when
 * `reset` is whole seconds and a window start was seen, the last instant
 * in (`now + reset − 1 s`, `now + reset`] that is a window start modulo a
 * second (a request sent then reaches the server after the reset, since
 * the start was noted at the send that first saw the new window).
 * `undefined` when it cannot be located: then the reset is `now + reset`.
 */
export function locateReset(w: QuotaWindow, now: number, reset: number): number | undefined {
  if (Number.isNaN(w.begin) || phase(reset) !== 0 || w.width >= SECOND) return undefined;
  const told = now + reset;
  return told - phase(told - w.begin);
}
