import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../src/lab/sim/virtual-clock.js';

const T0 = Date.UTC(2026, 0, 1);

describe('VirtualClock', () => {
  it('runs timers at their exact due time, then in scheduling order on a tie', async () => {
    const clock = new VirtualClock(T0);
    const log: string[] = [];
    const at = (label: string, ms: number) =>
      clock.sleep(ms).then(() => log.push(`${label}@${+(clock.now() - T0).toFixed(3)}`));
    void at('c', 30);
    void at('a', 10);
    void at('b', 10.2); // no rounding to whole milliseconds
    void at('a2', 10);
    await clock.run();
    expect(log).toEqual(['a@10', 'a2@10', 'b@10.2', 'c@30']);
    expect(clock.now() - T0).toBe(30);
  });

  it('runs a retry due at 5.3 ms before an arrival due at 5.7 ms scheduled earlier', async () => {
    const clock = new VirtualClock(T0);
    const log: string[] = [];
    clock.at(T0 + 5.7, () => log.push('arrival'));
    clock.at(T0 + 5.25, () => log.push('first'));
    void clock.sleep(5.3).then(() => log.push('retry'));
    await clock.run();
    expect(log).toEqual(['first', 'retry', 'arrival']);
  });

  it('lets a chain of awaits finish within its instant before time moves', async () => {
    const clock = new VirtualClock(T0);
    const seen: number[] = [];
    const chain = async () => {
      await clock.sleep(5);
      for (let i = 0; i < 50; i++) await Promise.resolve();
      seen.push(clock.now() - T0);
      await clock.sleep(0);
      seen.push(clock.now() - T0);
    };
    clock.at(T0 + 5.001, () => seen.push(-(clock.now() - T0)));
    void chain();
    await clock.run();
    expect(seen.map((x) => +x.toFixed(3))).toEqual([5, 5, -5.001]);
  });

  it('rejects an aborted sleep at once with the reason and never fires it', async () => {
    const clock = new VirtualClock(T0);
    const controller = new AbortController();
    const reason = new Error('stop');
    const outcome: unknown[] = [];
    clock.sleep(1_000, controller.signal).then(
      () => outcome.push('fired'),
      (error: unknown) => outcome.push(error, clock.now() - T0),
    );
    clock.at(T0 + 10, () => controller.abort(reason));
    await clock.run();
    expect(outcome).toEqual([reason, 10]);
    await expect(clock.sleep(5, controller.signal)).rejects.toBe(reason);
  });

  it('cancels a timer without a trace and fires the others', async () => {
    const clock = new VirtualClock(T0);
    const fired: string[] = [];
    const cancel = clock.timer(100, () => fired.push('cancelled'));
    clock.timer(200, () => fired.push('kept'));
    clock.at(T0 + 50, cancel);
    await clock.run();
    expect(fired).toEqual(['kept']);
  });

  it('stops at `until` and resumes from there', async () => {
    const clock = new VirtualClock(T0);
    const fired: number[] = [];
    for (const ms of [10, 20, 30]) clock.timer(ms, () => fired.push(ms));
    await clock.run(T0 + 25);
    expect(fired).toEqual([10, 20]);
    await clock.run();
    expect(fired).toEqual([10, 20, 30]);
  });

  it('keeps 10 000 timers in due order whatever order they were scheduled in', async () => {
    const clock = new VirtualClock(T0);
    const fired: number[] = [];
    let x = 12345;
    for (let i = 0; i < 10_000; i++) {
      x = (x * 1103515245 + 12345) % 2 ** 31;
      const ms = (x / 2 ** 31) * 1000;
      clock.timer(ms, () => fired.push(ms));
    }
    await clock.run();
    expect(fired).toHaveLength(10_000);
    for (let i = 1; i < fired.length; i++) expect(fired[i]!).toBeGreaterThanOrEqual(fired[i - 1]!);
  });
});
