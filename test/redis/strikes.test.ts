/** The per-key count of timed-out decisions that sends a key to local state (pure logic). */
import { describe, expect, it } from 'vitest';
import { DEGRADE_AFTER, DEGRADE_WINDOW, StrikeCounter } from '../../src/redis/wait.js';

describe('StrikeCounter', () => {
  it(`degrades a key on the ${DEGRADE_AFTER}rd timeout in a row, each sent after the previous struck`, () => {
    const strikes = new StrikeCounter();
    // Timeouts of decisions sent at 0, 60, 120, striking 50 ms later.
    expect(strikes.strike('k', 0, 50)).toBe(false);
    expect(strikes.strike('k', 60, 110)).toBe(false);
    expect(strikes.strike('k', 120, 170)).toBe(true);
    // The count starts over after a degradation.
    expect(strikes.strike('k', 200, 250)).toBe(false);
  });

  it('decisions in flight together during one slow spell are one strike', () => {
    const strikes = new StrikeCounter();
    // Ten decisions sent at 0–9, all timing out at 50–59: one strike.
    for (let i = 0; i < 10; i++) expect(strikes.strike('k', i, 50 + i)).toBe(false);
    expect(strikes.strike('k', 60, 110)).toBe(false);
    expect(strikes.strike('k', 120, 170)).toBe(true);
  });

  it('an answer in time clears the count; keys count apart', () => {
    const strikes = new StrikeCounter();
    strikes.strike('k', 0, 50);
    strikes.strike('k', 60, 110);
    strikes.clear('k');
    expect(strikes.strike('k', 120, 170)).toBe(false);
    expect(strikes.strike('other', 180, 230)).toBe(false);
    expect(strikes.strike('k', 240, 290)).toBe(false);
    expect(strikes.strike('k', 300, 350)).toBe(true);
  });

  it(`counts only within ${DEGRADE_WINDOW} ms of the first strike`, () => {
    const strikes = new StrikeCounter();
    strikes.strike('k', 0, 50);
    strikes.strike('k', 60, 110);
    // The third comes too late: it is the first of a new count.
    expect(strikes.strike('k', DEGRADE_WINDOW, DEGRADE_WINDOW + 51)).toBe(false);
    expect(strikes.strike('k', DEGRADE_WINDOW + 60, DEGRADE_WINDOW + 110)).toBe(false);
    expect(strikes.strike('k', DEGRADE_WINDOW + 120, DEGRADE_WINDOW + 170)).toBe(true);
  });
});
