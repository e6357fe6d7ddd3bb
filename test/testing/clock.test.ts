/** staunch/testing's clock: the virtual clock with a log of every wait and test controls. */
import { describe, expect, test } from 'vitest';
import { startTimer } from '../../src/internal/clock.js';
import { TestClock, testClock } from '../../src/testing/index.js';

const START = 1_767_225_600_000;

describe('testClock', () => {
  test('starts at 2026-01-01 or the given instant; a bad start is a RangeError naming it', () => {
    expect(testClock().now()).toBe(START);
    expect(testClock(5).now()).toBe(5);
    expect(testClock()).toBeInstanceOf(TestClock);
    expect(() => testClock(-1)).toThrow(RangeError);
    expect(() => testClock(-1)).toThrow('testClock start must be a number >= 0, got -1');
  });

  test('advance fires every wait due up to and including the new instant, in order, and lands on it', async () => {
    const clock = testClock();
    const fired: string[] = [];
    void clock.sleep(30).then(() => fired.push(`30@${clock.now() - START}`));
    void clock.sleep(10).then(() => fired.push(`10@${clock.now() - START}`));
    void clock.sleep(31).then(() => fired.push('31'));
    await clock.advance(30);
    expect(fired).toEqual(['10@10', '30@30']);
    expect(clock.now()).toBe(START + 30);
    expect(clock.remaining()).toEqual([1]);
    await clock.advance(5);
    expect(fired).toEqual(['10@10', '30@30', '31']);
    expect(clock.now()).toBe(START + 35);
    expect(clock.sleeps).toEqual([30, 10, 31]);
  });

  test('an aborted sleep rejects with the reason at once and is no longer pending', async () => {
    const clock = testClock();
    const abort = new AbortController();
    const sleeping = clock.sleep(1000, abort.signal);
    expect(clock.remaining()).toEqual([1000]);
    abort.abort(new Error('stop'));
    await expect(sleeping).rejects.toThrow('stop');
    expect(clock.remaining()).toEqual([]);
    expect(await clock.runNext()).toBe(false);
    expect(clock.sleeps).toEqual([1000]);
  });

  test("staunch's deadline timers are logged too, and a cancelled one leaves nothing pending", async () => {
    const clock = testClock();
    let fired = 0;
    const cancel = startTimer(clock, 60_000, () => fired++);
    startTimer(clock, 250, () => fired++);
    expect(clock.remaining()).toEqual([250, 60_000]);
    cancel();
    expect(clock.remaining()).toEqual([250]);
    expect(await clock.runNext()).toBe(true);
    expect([fired, clock.now() - START]).toEqual([1, 250]);
    expect(clock.sleeps).toEqual([60_000, 250]);
  });

  test('autoAdvance runs the waits while idle() holds, and stops when told', async () => {
    const clock = testClock();
    let busy = true;
    const stop = clock.autoAdvance(() => !busy);
    let done = false;
    const sleeping = clock.sleep(5000).then(() => {
      done = true;
    });
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    expect(done).toBe(false);
    busy = false;
    await sleeping;
    expect(clock.now()).toBe(START + 5000);
    stop();
  });
});

test('its methods work detached: `clock.now` handed on as a plain function', async () => {
  const clock = testClock();
  const { now, sleep, advance } = clock;
  const slept = sleep(10);
  await advance(10);
  await slept;
  expect(now()).toBe(START + 10);
});
