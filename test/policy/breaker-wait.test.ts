/**
 * Issue 9, item 1: an open circuit is a not-sent outcome. A request that may
 * still be retried, and whose deadline outlasts the next probe, waits for the
 * probe's verdict (no attempt counted, no budget charged) and goes once the
 * circuit closes; the others fail fast. Real servers, virtual time.
 */
import { describe, expect, test } from 'vitest';
import {
  CircuitOpenError,
  type GiveUpEvent,
  type RequestEndEvent,
  type RetryEvent,
  type WaitEvent,
} from '../../src/index.js';
import { breakerDefaults } from '../../src/policy/breaker/breaker.js';
import { type BreakerConfig, type BreakerState, waitBreak } from '../../src/policy/breaker/ops.js';
import { flush, until } from '../helpers/clock.js';
import { client, settled } from '../helpers/harness.js';
import { httpServer, type TestServer } from '../helpers/server.js';
import { closeAfterEach } from '../helpers/teardown.js';

const cleanup = closeAfterEach();

/** A server answering 503 while `down()` says so, 200 otherwise; `at` logs the client clock of each arrival. */
async function upstream(down: () => boolean, at: number[], now: () => number): Promise<TestServer> {
  const server = await httpServer((_req, res) => {
    at.push(now());
    res.statusCode = down() ? 503 : 200;
    res.end();
  });
  cleanup.add(server);
  return server;
}

function setup(options: Parameters<typeof client>[0] = {}) {
  const events = {
    wait: [] as WaitEvent[],
    giveUp: [] as GiveUpEvent[],
    end: [] as RequestEndEvent[],
    retry: [] as RetryEvent[],
  };
  const c = client({
    ...options,
    on: {
      wait: (e) => events.wait.push(e),
      giveUp: (e) => events.giveUp.push(e),
      end: (e) => events.end.push(e),
      retry: (e) => events.retry.push(e),
    },
  });
  cleanup.defer(c.stop);
  return { ...c, events };
}

/**
 * A client (setup's) and an upstream that answers 503 from `down[0]` to
 * `down[1]` ms after the client's clock starts, 200 otherwise; `arrivals`
 * logs the client clock of each request the upstream received.
 */
async function outageClient(options: Parameters<typeof client>[0], down: [number, number]) {
  const arrivals: number[] = [];
  const c = setup(options);
  const start = c.clock.now();
  const server = await upstream(
    () => c.clock.now() - start >= down[0] && c.clock.now() - start < down[1],
    arrivals,
    () => c.clock.now(),
  );
  return { ...c, server, arrivals, recoverAt: start + down[1] };
}

const status = (p: Promise<Response>) =>
  p.then(
    (r) => String(r.status),
    (e: unknown) => (e as { code?: string }).code ?? String(e),
  );

describe('requests wait out an open circuit that their deadline covers', () => {
  test('a 15 s outage under 60 s deadlines: every request succeeds, four probes a second', async () => {
    const { fetch, events, server, arrivals, recoverAt } = await outageClient(
      {
        retry: 6,
        timeout: { total: 60_000 },
        breaker: { consecutiveFailures: 5 },
      },
      [0, 15_000],
    );
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) => status(fetch(`${server.url}/${i}`))),
    );
    expect(results).toEqual(Array(40).fill('200'));
    // While down: the first attempts before the trip, then the probes. With many waiting,
    // a tenth of the outage so far apart (at least 50 ms), then every probeInterval
    // (250 ms): about 76 in 15 s, against 40 × 5 retries from a plain loop.
    const probeInterval = breakerDefaults.probeInterval;
    expect(probeInterval).toBe(250);
    const cfg = { probeInterval, maxBreakDuration: breakerDefaults.maxBreakDuration };
    let probes = 0;
    for (let t = 0; t < 15_000; probes++) {
      t += waitBreak({ openedAt: 0 } as BreakerState, cfg as BreakerConfig, t, true);
    }
    expect(probes).toBeGreaterThan(15_000 / probeInterval);
    expect(probes).toBeLessThan(80);
    const whileDown = arrivals.filter((t) => t < recoverAt).length;
    expect(whileDown).toBeLessThanOrEqual(40 + probes + 2);
    // Recovery seen within a probe interval (plus the poll) of the upstream's return.
    const firstOk = arrivals.find((t) => t >= recoverAt)!;
    expect(firstOk - recoverAt).toBeLessThanOrEqual(probeInterval + 70);
    // Waiting is not an attempt: no request used more than it is allowed.
    expect(events.end.every((e) => e.attempts <= 6)).toBe(true);
    expect(events.wait.some((e) => e.reason === 'circuit-open' && e.duration > 0)).toBe(true);
    expect(events.giveUp).toEqual([]);
  });

  test('the retry event says the scheduled delay; the wait events every wait, circuit included', async () => {
    const { fetch, events, server, arrivals } = await outageClient(
      {
        retry: 3,
        timeout: { total: 60_000 },
        breaker: { consecutiveFailures: 1, probeInterval: 1_000 },
      },
      [0, 2_000],
    );
    // Attempt 1 trips the circuit; attempt 2 is the probe at ~1 s (still down), 3 the one after.
    expect(await status(fetch(server.url))).toBe('200');
    expect(arrivals).toHaveLength(3);
    expect(events.retry.map((e) => e.attempt)).toEqual([1, 2]);
    // `retry` is said before the wait, with the backoff it scheduled; the circuit's wait is a
    // `wait` of its own.
    const backoffs = events.wait.filter((e) => e.reason === 'backoff').map((e) => e.duration);
    expect(events.retry.map((e) => e.delay)).toEqual(backoffs);
    expect(events.wait.some((e) => e.reason === 'circuit-open' && e.duration > 0)).toBe(true);
    // Attempts take no virtual time here: the gaps are the whole waits, backoff and circuit.
    const waited = events.wait.reduce((sum, e) => sum + e.duration, 0);
    expect(waited).toBe(arrivals[2]! - arrivals[0]!);
    expect(new Set(events.wait.map((e) => e.reason))).toEqual(new Set(['backoff', 'circuit-open']));
  });

  test('released waiters pass the rate limiter: the backlog does not return as one burst', async () => {
    const { fetch, server, arrivals, recoverAt } = await outageClient(
      {
        retry: 3,
        timeout: { total: 60_000 },
        breaker: { consecutiveFailures: 1 },
        budget: false,
        rateLimit: { rps: 20, burst: 1 },
      },
      [0, 5_000],
    );
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => status(fetch(`${server.url}/${i}`))),
    );
    expect(results).toEqual(Array(20).fill('200'));
    const after = arrivals.filter((t) => t >= recoverAt);
    const gaps = after.slice(1).map((t, i) => t - after[i]!);
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(49);
  });

  test('a long break shrinks to the probe interval once a request waits', async () => {
    const { fetch, server, arrivals } = await outageClient(
      {
        retry: 6,
        timeout: { total: 30_000 },
        breaker: { consecutiveFailures: 1, breakDuration: 60_000, probeInterval: 1_000 },
      },
      [0, 3_000],
    );
    // The first attempt trips a 60 s break; the retry waits, probes every probeInterval,
    // and sees the recovery soon after 3 s, not after 60.
    expect(await status(fetch(server.url))).toBe('200');
    expect(arrivals.at(-1)! - arrivals[0]!).toBeLessThan(5_000);
    expect(arrivals.length).toBeLessThanOrEqual(5);
  });
});

describe('what fails fast on an open circuit', () => {
  /** A dead upstream; one failure trips the circuit for 5 s. */
  async function dead(options: NonNullable<Parameters<typeof client>[0]>) {
    const server = await upstream(
      () => true,
      [],
      () => 0,
    );
    const c = setup({
      ...options,
      breaker: { consecutiveFailures: 1, ...(options.breaker as object | undefined) },
    });
    return { ...c, server };
  }

  test('retry: false', async () => {
    const { fetch, server } = await dead({ retry: false });
    expect(await status(fetch(server.url))).toBe('503');
    const err = await fetch(server.url).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CircuitOpenError);
    expect(server.received).toHaveLength(1);
  });

  test('breaker.failFast: true', async () => {
    const { fetch, server, events } = await dead({ retry: 3, breaker: { failFast: true } });
    const err = await fetch(server.url).catch((e: unknown) => e);
    // The first attempt's 503 tripped it; its retry failed fast instead of waiting.
    expect(err).toBeInstanceOf(CircuitOpenError);
    expect(server.received).toHaveLength(1);
    expect(events.wait.filter((e) => e.reason === 'circuit-open')).toEqual([]);
    expect(events.giveUp.map((e) => e.reason)).toEqual(['circuit-open']);
  });

  test('a deadline that cannot reach the next probe', async () => {
    const { fetch, server, events } = await dead({
      retry: { attempts: 3, backoff: () => 10 },
      timeout: { total: 200 },
    });
    const err = await fetch(server.url).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CircuitOpenError);
    expect(server.received).toHaveLength(1);
    expect(events.wait.filter((e) => e.reason === 'circuit-open')).toEqual([]);
  });

  test('a request past breaker.maxWaiting, while that many wait', async () => {
    const server = await upstream(
      () => true,
      [],
      () => 0,
    );
    const changes: string[] = [];
    const giveUps: GiveUpEvent[] = [];
    // The clock stands still: nothing is probed while the test looks.
    const c = client(
      {
        retry: { attempts: 3, backoff: () => 0 },
        timeout: { total: 60_000 },
        breaker: { consecutiveFailures: 1, maxWaiting: 2 },
        on: {
          breakerStateChange: (e) => changes.push(e.to),
          giveUp: (e) => giveUps.push(e),
        },
      },
      { hold: () => true },
    );
    cleanup.defer(c.stop);
    const controller = new AbortController();
    const signal = controller.signal;
    // The first one's 503 trips the circuit and its retry waits; the second one waits too.
    const first = settled(c.fetch(`${server.url}/0`, { signal }));
    await until(() => changes.includes('open'));
    await flush();
    const second = settled(c.fetch(`${server.url}/1`, { signal }));
    await flush();
    const third = settled(c.fetch(`${server.url}/2`));
    await until(() => third.done);
    expect(third.error).toBeInstanceOf(CircuitOpenError);
    expect(giveUps.map((e) => [e.url, e.reason])).toEqual([[`${server.url}/2`, 'circuit-open']]);
    // Refused without a word to the upstream: it saw only the first request's attempt.
    expect(server.received.map((r) => r.path)).toEqual(['/0']);
    expect(first.done || second.done).toBe(false);
    controller.abort(new Error('done'));
    await until(() => first.done && second.done);
    expect([first.error, second.error]).toEqual([new Error('done'), new Error('done')]);
  });

  test("the caller's abort ends the wait at once with the caller's reason", async () => {
    const { fetch, server } = await dead({ retry: 3, timeout: { total: 60_000 } });
    const controller = new AbortController();
    const reason = new Error('caller gave up');
    const pending = fetch(server.url, { signal: controller.signal }).catch((e: unknown) => e);
    // The first attempt tripped the circuit, a probe failed: the retry is waiting.
    await until(() => server.received.length >= 2);
    controller.abort(reason);
    expect(await pending).toBe(reason);
  });
});

describe('the backlog comes back paced, faster while it succeeds', () => {
  test('10 requests a second, a 3 s outage: no burst, and drained sooner than at the old pace', async () => {
    const {
      fetch,
      clock,
      events,
      server,
      arrivals,
      recoverAt: upAt,
    } = await outageClient(
      {
        retry: 6,
        timeout: { total: 60_000 },
        breaker: { consecutiveFailures: 3 },
        rateLimit: false,
        budget: false,
      },
      [3_000, 6_000],
    );
    const all: Promise<string>[] = [];
    for (let i = 0; i < 90; i++) {
      all.push(status(fetch(`${server.url}/${i}`)));
      await clock.sleep(100);
    }
    const results = await Promise.all(all);
    expect(results).toEqual(Array(90).fill('200'));
    expect(events.wait.some((e) => e.reason === 'circuit-open')).toBe(true);
    const after = arrivals.filter((t) => t >= upAt);
    // About 30 requests waited out the outage. Released at once they would reach the
    // server within a few ms: paced, no 100 ms after the recovery holds more than a fifth
    // of them (the pace grows while they succeed: up to 60/s here, beside the new 10/s).
    for (const t of after) {
      expect(after.filter((u) => u >= t && u < t + 100).length).toBeLessThanOrEqual(6);
    }
    // At the pace before the outage (10/s) the backlog would take 3 s beside the new 10/s;
    // each success raises the pace, so within 2 s of the recovery the backlog and the new
    // requests are all out (30 + 20, against about 40 at the old pace).
    expect(after.filter((t) => t < upAt + 2_000).length).toBeGreaterThanOrEqual(48);
  });
});

describe('probes early in an outage come sooner while many wait', () => {
  test('a 1 s outage with 40 waiting: seen within 100 ms of its end', async () => {
    const { fetch, server, arrivals, recoverAt } = await outageClient(
      {
        retry: 6,
        timeout: { total: 60_000 },
        breaker: { consecutiveFailures: 5 },
        rateLimit: false,
      },
      [0, 1_000],
    );
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) => status(fetch(`${server.url}/${i}`))),
    );
    expect(results).toEqual(Array(40).fill('200'));
    // A tenth of the outage so far apart, at least 50 ms: the last probe before the end
    // goes at most 100 ms before it, so the first answer after it comes within 100 ms
    // (a steady probeInterval left up to 250 ms).
    const firstOk = arrivals.find((t) => t >= recoverAt)!;
    expect(firstOk - recoverAt).toBeLessThanOrEqual(100);
    // Probes in the outage: after the 40 first attempts, at 50 ms apart at first, then a
    // tenth of the time open: about 17 in the second, not one every 50 ms (20).
    const probes = arrivals.filter((t) => t < recoverAt).length - 40;
    expect(probes).toBeGreaterThan(1_000 / breakerDefaults.probeInterval);
    expect(probes).toBeLessThanOrEqual(20);
  });

  test('a 5 s outage with 300 waiting: probed every 80 ms, seen within 80 ms of its end', async () => {
    const { fetch, events, server, arrivals, recoverAt } = await outageClient(
      {
        retry: 6,
        timeout: { total: 60_000 },
        breaker: { consecutiveFailures: 5 },
        rateLimit: false,
      },
      [0, 5_000],
    );
    const results = await Promise.all(
      Array.from({ length: 300 }, (_, i) => status(fetch(`${server.url}/${i}`))),
    );
    expect(results).toEqual(Array(300).fill('200'));
    // 300 waiting: the ceiling is 24 s ÷ 300 = 80 ms (a steady probeInterval left up to
    // 250 ms after the first 2.5 s); each probe timed from the last one's departure.
    const firstOk = arrivals.find((t) => t >= recoverAt)!;
    expect(firstOk - recoverAt).toBeLessThanOrEqual(80);
    const probes = arrivals.filter((t) => t < recoverAt).length - 300;
    expect(probes).toBeGreaterThan(5_000 / breakerDefaults.probeInterval + 20);
    expect(probes).toBeLessThanOrEqual(5_000 / 50 + 1);
    // Taking turns: nobody carried more than its share of them.
    expect(Math.max(...events.end.map((e) => e.attempts))).toBeLessThanOrEqual(3);
    expect(events.giveUp).toEqual([]);
  });
});
