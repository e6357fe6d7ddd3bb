/**
 * The latency tail on real sockets: the live upstream (a child process)
 * counts the attempts it received and the work it spent, and stops serving
 * a request whose socket closed. A hedge's aborted loser must show there as
 * work not spent. Real time, so it runs alone (vitest.config.ts).
 */
import { describe, expect, it } from 'vitest';
import { useBuiltLab } from '../helpers/built-lab.js';

const built = useBuiltLab();

describe('hedging live, against the latency tail', () => {
  it('the naive hedge cuts the tail, and the upstream stops its aborted losers', async () => {
    // 300 requests over 3 s, 5 % of them 1 s slow; the naive hedge after 100 ms.
    const result = await built().lab.runLab({
      scenario: 'latency-tail',
      mode: 'live',
      requests: 300,
      span: 3_000,
      deadline: 5_000,
      strategies: ['staunch', 'hedge-fixed'],
      seed: 3,
    });
    const [plain, naive] = result.strategies;
    expect(plain!.success).toBe(1);
    expect(naive!.success).toBe(1);
    // What the upstream received: one attempt a request without hedging, a hedge for the
    // slow ones (and for what the loaded machine slowed past 100 ms) with it.
    expect(plain!.serverArrivals).toBe(300);
    expect(naive!.serverArrivals).toBeGreaterThan(300);
    expect(naive!.attemptsPerRequest).toBeLessThan(1.5);
    // Without a hedge a slow request is served its full second; with one, its original is
    // aborted once the hedge answered, and the upstream spends no more on it.
    expect(plain!.workPerRequest!).toBeGreaterThan(70);
    expect(naive!.workPerRequest!).toBeLessThan(0.85 * plain!.workPerRequest!);
    expect(naive!.p99!).toBeLessThan(0.6 * plain!.p99!);
  }, 120_000);
});
