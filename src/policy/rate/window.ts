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
  /**
   * A window end, the earliest of those a spent window's pause was told
   * (located, or `Retry-After` rounded up), moved to the same window; `NaN`
   * before any.
   */
  end: number;
  /** The windows' length: the least gap in whole seconds between two such ends; 0 before two. */
  length: number;
  /** How fast the counter falls within a window, per ms (all clients together); 0 before it fell. */
  pace: number;
  /** When the request of the later of the two counts the pace was read from was sent. */
  paceAt: number;
  /** The end of the last window this process paused for, counted ahead; 0 before any. */
  paused: number;
  /**
   * The window's end as the last response with requests left told it (its
   * reset, in whole seconds: up to a second late); `NaN` before any. Where
   * the windows' length is not known yet, a window spent by the pace ends there.
   */
  told: number;
}

/** A window length, and a reset given in whole seconds, are multiples of this (ms). */
const SECOND = 1000;

/** Nothing seen yet. */
export function quotaWindow(): QuotaWindow {
  return {
    remaining: -1,
    sentAt: Number.NEGATIVE_INFINITY,
    begin: Number.NaN,
    width: 0,
    end: Number.NaN,
    length: 0,
    pace: 0,
    paceAt: Number.NaN,
    paused: 0,
    told: Number.NaN,
  };
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

/**
 * Notes that a spent window ends at `end` (the pause it caused). Ends told
 * in whole seconds are late by up to a second: of two ends, moved to the
 * same window, the earlier is kept. Their gap, in whole seconds, is a
 * multiple of the windows' length: the least one seen is taken for it.
 */
export function windowEnded(w: QuotaWindow, end: number): void {
  if (Number.isNaN(w.end)) {
    w.end = end;
    return;
  }
  const gap = Math.round(Math.abs(end - w.end) / SECOND) * SECOND;
  if (gap >= SECOND && (w.length === 0 || gap < w.length)) w.length = gap;
  if (w.length === 0) {
    w.end = Math.max(w.end, end);
    return;
  }
  const moved = w.end + Math.round((end - w.end) / w.length) * w.length;
  w.end = Math.min(moved, end);
}

/**
 * Whether the window a request sent at `sentAt` was counted in is spent by
 * `now`, though its answer said `remaining` (> 0 or not): every client went
 * on taking it meanwhile at the counter's pace. Clients that each pause
 * only on their own 429 or their own count of 0 pay one 429 each a window
 * (20 clients against 40 a window: 0.38 429s a success); counted ahead,
 * the others stop too. Answers that window's end (from {@link windowEnded}),
 * or `undefined` when the windows are not known or budget is left. Call it
 * before {@link windowSeen} notes the count: the pace is learnt from two
 * counts of one window at least 10 ms apart, and kept for the next ones.
 */
export function spentBy(
  w: QuotaWindow,
  remaining: number,
  sentAt: number,
  now: number,
): number | undefined {
  if (!(sentAt > w.sentAt)) return undefined;
  const span = sentAt - w.sentAt;
  // A count no higher than the one before, within a window's length: the same window.
  if (remaining <= w.remaining && span >= PACE_SPAN && (w.length === 0 || span < w.length)) {
    w.pace = (w.remaining - remaining) / span;
    w.paceAt = sentAt;
  }
  return ahead(w, remaining, sentAt, now);
}

/**
 * {@link spentBy} before a send at `now`, from the last count noted: the
 * requests of the other clients since may have spent the window. Each
 * window is answered once (then the key is paused to its end).
 */
export function spentNow(w: QuotaWindow, now: number): number | undefined {
  if (w.remaining < 0) return undefined;
  return ahead(w, w.remaining, w.sentAt, now);
}

/** The end of the window of a count `remaining` sent at `sentAt`, if it is spent by `now`. */
function ahead(w: QuotaWindow, remaining: number, sentAt: number, now: number): number | undefined {
  // Windows not located yet: the end the server told, rounded up to its second, and only
  // by a pace read in this window (one read in the last, before the clients slowed, sees
  // every window spent at once). Without it, 20 clients sharing 40 a second drew 19 429s
  // in each of the first two windows.
  const unlocated = w.length === 0;
  if (unlocated && !(w.told > sentAt && w.paceAt === sentAt)) return undefined;
  if (!(w.pace > 0) || remaining - w.pace * (now - sentAt) >= 0) return undefined;
  const end = unlocated ? w.told : w.end + (Math.floor((sentAt - w.end) / w.length) + 1) * w.length;
  if (end <= now || end <= w.paused) return undefined;
  w.paused = end;
  // A told end, like a spent window's reset, locates the windows once there are two.
  if (unlocated) windowEnded(w, end);
  return end;
}

/** The least ms between two counts that a pace is read from (a burst says little of it). */
const PACE_SPAN = 10;
