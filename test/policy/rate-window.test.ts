import { describe, expect, it } from 'vitest';
import { RATE_KEY_PREFIX, RateLimiter, rateLimitDefaults } from '../../src/policy/rate/limiter.js';
import type { RateState } from '../../src/policy/rate/ops.js';
import {
  locateReset,
  quotaWindow,
  spentBy,
  spentNow,
  windowEnded,
  windowSeen,
} from '../../src/policy/rate/window.js';
import { memoryStore } from '../../src/store/memory.js';
import { fakeClock } from '../helpers/clock.js';

const KEY = 'https://api.example.com';

describe('locateReset', () => {
  it('is unknown until a counter rises between two sends', () => {
    const w = quotaWindow();
    expect(locateReset(w, 5_000, 1_000)).toBeUndefined();
    windowSeen(w, 9, 1_000);
    windowSeen(w, 8, 1_100);
    expect(locateReset(w, 5_000, 1_000)).toBeUndefined();
    windowSeen(w, 99, 1_320); // a window began in (1 100, 1 320]
    expect(locateReset(w, 5_000, 1_000)).toBe(5_320);
    expect(locateReset(w, 5_400, 1_000)).toBe(6_320);
    expect(locateReset(w, 5_400, 3_000)).toBe(8_320);
  });

  it('keeps the narrowest bracket that agrees, and takes one that does not', () => {
    const w = quotaWindow();
    windowSeen(w, 5, 1_000);
    windowSeen(w, 99, 1_320); // (1 000, 1 320]
    windowSeen(w, 0, 2_300);
    windowSeen(w, 99, 2_305); // (2 300, 2 305]: narrower, agrees
    expect(locateReset(w, 5_000, 1_000)).toBe(5_305);
    windowSeen(w, 0, 3_000);
    windowSeen(w, 99, 3_310); // (3 000, 3 310]: wider, agrees: kept the narrow one
    expect(locateReset(w, 5_000, 1_000)).toBe(5_305);
    windowSeen(w, 0, 4_600);
    windowSeen(w, 99, 4_700); // (4 600, 4 700] holds no x305: the windows moved
    expect(locateReset(w, 5_000, 1_000)).toBe(5_700);
  });

  it('ignores answers overtaken by a later send, and resets that are not whole seconds', () => {
    const w = quotaWindow();
    windowSeen(w, 5, 1_000);
    windowSeen(w, 99, 1_320);
    windowSeen(w, 98, 1_330);
    windowSeen(w, 200, 1_200); // sent before the last one: says nothing
    expect(locateReset(w, 5_000, 1_000)).toBe(5_320);
    expect(locateReset(w, 5_000, 750)).toBeUndefined(); // retry-after-ms: exact as told
  });
});

describe('windowEnded: where windows end, and how long they are', () => {
  it('keeps the earliest end moved to one window, the least whole-second gap as the length', () => {
    const w = quotaWindow();
    windowEnded(w, 2_445); // told "1 s" at 1 445: the end is at most then
    expect([w.end, w.length]).toEqual([2_445, 0]);
    windowEnded(w, 3_597); // told at 2 597: 1 152 ms on, a 1 s window; 3 445 is earlier in it
    expect([w.end, w.length]).toEqual([3_445, 1_000]);
    windowEnded(w, 5_310); // earlier in its window than x445: taken
    expect([w.end, w.length]).toEqual([5_310, 1_000]);
    windowEnded(w, 9_500); // later in its window: x310 stays, moved on
    expect([w.end, w.length]).toEqual([9_310, 1_000]);
  });

  it('learns a longer window from ends whole windows apart', () => {
    const w = quotaWindow();
    windowEnded(w, 60_000);
    windowEnded(w, 180_000);
    expect(w.length).toBe(120_000);
    windowEnded(w, 240_000);
    expect(w.length).toBe(60_000);
  });
});

describe('spentBy and spentNow: a window spent by the other clients, counted ahead', () => {
  /** Windows of 1 s ending at whole seconds, learnt from two pauses. */
  function learnt() {
    const w = quotaWindow();
    windowEnded(w, 1_000);
    windowEnded(w, 2_000);
    return w;
  }

  it('reads the pace from two counts of one window, and answers its end once', () => {
    const w = learnt();
    expect(spentBy(w, 30, 2_100, 2_152)).toBeUndefined(); // one count: no pace yet
    windowSeen(w, 30, 2_100);
    // 30 → 20 in 100 ms: 0.1 a ms; 20 left at 2 200, 52 ms later 14.8: budget left.
    expect(spentBy(w, 20, 2_200, 2_252)).toBeUndefined();
    expect(w.pace).toBeCloseTo(0.1);
    windowSeen(w, 20, 2_200);
    // 4 left at 2 360: by 2 412, 4 − 0.1 × 52 < 0. The window ends at 3 000.
    expect(spentBy(w, 4, 2_360, 2_412)).toBe(3_000);
    windowSeen(w, 4, 2_360);
    expect(spentNow(w, 2_420)).toBeUndefined(); // answered once a window
  });

  it('before a send, from the last count, at the pace of earlier windows', () => {
    const w = learnt();
    windowSeen(w, 30, 2_100);
    spentBy(w, 20, 2_200, 2_252);
    windowSeen(w, 20, 2_200);
    windowSeen(w, 40, 3_010); // the next window: the count rose
    expect(spentBy(w, 38, 3_012, 3_064)).toBeUndefined(); // 2 ms apart: not a pace
    expect(w.pace).toBeCloseTo(0.1);
    windowSeen(w, 38, 3_012);
    expect(spentNow(w, 3_300)).toBeUndefined(); // 38 − 28.8 left
    expect(spentNow(w, 3_400)).toBe(4_000); // 38 − 38.8: spent
  });

  it('nothing before the windows are known, or for a count of an earlier window', () => {
    const w = quotaWindow();
    windowSeen(w, 30, 2_100);
    expect(spentBy(w, 0, 2_200, 2_252)).toBeUndefined(); // no window length yet
    const v = learnt();
    windowSeen(v, 1, 1_900);
    expect(spentNow(v, 2_300)).toBeUndefined(); // its window ended at 2 000
  });

  it('before the windows are known: the end a count told, by a pace read in its window', () => {
    const w = quotaWindow();
    w.told = 1_052 + 1_000; // the reset of the count at 1 052: "1 s", rounded up
    windowSeen(w, 37, 0);
    // 37 → 17 in 52 ms: the window is spent by 104. Paused to the told end, which also
    // counts as a window's end towards locating the windows.
    expect(spentBy(w, 17, 52, 104)).toBe(2_052);
    expect(w.end).toBe(2_052);
    windowSeen(w, 17, 52);
    // The next window: the count rose; the pace is the last window's, not this one's.
    w.told = 2_156 + 1_000;
    expect(spentBy(w, 37, 2_104, 2_156)).toBeUndefined();
    windowSeen(w, 37, 2_104);
    expect(spentNow(w, 2_400)).toBeUndefined(); // 37 − 0.38 × 296 < 0, but no pace of its own
    // A second count of this window gives its pace: 37 → 30 in 100 ms, spent by 2 700.
    expect(spentBy(w, 30, 2_204, 2_256)).toBeUndefined();
    windowSeen(w, 30, 2_204);
    expect(spentNow(w, 2_700)).toBe(3_156);
  });
});

/** A fixed window of `limit` per second, the windows starting at 300 ms past each second. */
function server(limit: number) {
  let index = Number.NaN;
  let used = 0;
  return (t: number): number => {
    const i = Math.floor((t - 300) / 1_000);
    if (i !== index) {
      index = i;
      used = 0;
    }
    used = Math.min(limit, used + 1);
    return limit - used;
  };
}

async function setup(counters: boolean) {
  const clock = fakeClock();
  const memory = memoryStore();
  const limiter = new RateLimiter(rateLimitDefaults, memory, clock);
  const state = () => memory.peek(RATE_KEY_PREFIX + KEY, clock.now()) as RateState;
  const remaining = server(1_000);
  for (let i = 0; i < 200; i++) {
    const sentAt = clock.now();
    await limiter.acquire(KEY, 1_000);
    const left = remaining(sentAt);
    await clock.advance(20);
    await limiter.onResponse(KEY, 200, { sentAt, ...(counters && { remaining: left }) });
  }
  return { clock, limiter, state };
}

describe('a fixed window whose counter the responses carry', () => {
  it('pauses a spent window to its start, not to the whole second the header rounds to', async () => {
    const s = await setup(true);
    const now = s.clock.now(); // 4 000 ms past the start: the window began at 3 300
    await s.limiter.onResponse(KEY, 429, { remaining: 0, reset: 1_000, sentAt: now - 5 });
    expect(s.state().at).toBe(now + 300);
  });

  /** Two spent windows 1.5 s apart: the rate before and after the second, and its pause. */
  async function twoSpends(counters: boolean) {
    const s = await setup(counters);
    await s.limiter.onResponse(KEY, 429, { remaining: 0, reset: 1_000, sentAt: s.clock.now() });
    const before = s.state().rate;
    await s.clock.advance(1_500);
    const now = s.clock.now();
    await s.limiter.onResponse(KEY, 429, { remaining: 0, reset: 1_000, sentAt: now - 5 });
    return { before, after: s.state().rate, pause: s.state().at - now };
  }

  it('does not cut an engaged key for a spent window whose reset it located', async () => {
    const { before, after, pause } = await twoSpends(true);
    expect(after).toBe(before);
    expect(pause).toBe(800);
  });

  it('without the counter, pauses the whole second told and cuts', async () => {
    const { before, after, pause } = await twoSpends(false);
    expect(after).toBeLessThan(before);
    expect(pause).toBe(1_000);
  });
});
