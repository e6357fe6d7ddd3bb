/**
 * The four policies against real servers on 127.0.0.1, in virtual time: the
 * server counts what reaches it, the client's clock is the fake one.
 */
import { describe, expect, test } from 'vitest';
import {
  type BreakerStateChangeEvent,
  CircuitOpenError,
  type GiveUpEvent,
  QueueFullError,
  QueueTimeoutError,
} from '../../src/index.js';
import { breakerDefaults } from '../../src/policy/breaker/breaker.js';
import { PROBE_FLOOR_MS } from '../../src/policy/breaker/ops.js';
import { flush, until } from '../helpers/clock.js';
import { client } from '../helpers/harness.js';
import { httpServer, type TestServer } from '../helpers/server.js';
import { closeAfterEach } from '../helpers/teardown.js';

const cleanup = closeAfterEach();

async function serve(handler: Parameters<typeof httpServer>[0]): Promise<TestServer> {
  const server = await httpServer(handler);
  cleanup.add(server);
  return server;
}

function setup(options: Parameters<typeof client>[0] = {}, hold?: () => boolean) {
  const events = { breaker: [] as BreakerStateChangeEvent[], giveUp: [] as GiveUpEvent[] };
  const c = client(
    {
      ...options,
      on: {
        breakerStateChange: (e) => events.breaker.push(e),
        giveUp: (e) => events.giveUp.push(e),
        ...options.on,
      },
    },
    hold === undefined ? {} : { hold },
  );
  cleanup.defer(c.stop);
  return { ...c, events };
}

const outcome = (p: Promise<Response>) =>
  p.then(
    (r) => String(r.status),
    (e: unknown) => (e as { code?: string }).code ?? String(e),
  );

describe('circuit breaker', () => {
  test('a dead upstream opens the circuit and stops seeing calls', async () => {
    const server = await serve((_req, res) => {
      res.statusCode = 503;
      res.end();
    });
    const { fetch, events, calls } = setup({ retry: false });
    const results: string[] = [];
    for (let i = 0; i < 50; i++) results.push(await outcome(fetch(`${server.url}/${i}`)));
    // Ratio 0.5 over at least 20 calls: the 20th failure trips it.
    expect(server.received).toHaveLength(20);
    expect(calls).toHaveLength(20);
    expect(results.slice(0, 20)).toEqual(Array(20).fill('503'));
    expect(results.slice(20)).toEqual(Array(30).fill('STAUNCH_CIRCUIT_OPEN'));
    expect(events.breaker).toEqual([{ key: server.url, from: 'closed', to: 'open' }]);
  });

  test('CircuitOpenError says when the next probe may go, and never touches the network', async () => {
    const server = await serve((_req, res) => {
      res.statusCode = 500;
      res.end();
    });
    const { fetch, clock } = setup({ retry: false, breaker: { consecutiveFailures: 3 } });
    for (let i = 0; i < 3; i++) await fetch(server.url);
    await clock.advance(2000);
    const err = await fetch(server.url).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CircuitOpenError);
    expect((err as CircuitOpenError).retryAfter).toBe(3000);
    expect(server.received).toHaveLength(3);
  });

  test('half-open: 30 concurrent callers, exactly one probe reaches the server; its success closes', async () => {
    let failing = true;
    const held: (() => void)[] = [];
    const server = await serve((_req, res) => {
      if (failing) {
        res.statusCode = 502;
        res.end();
      } else {
        held.push(() => res.end('ok'));
      }
    });
    const { fetch, clock, events } = setup(
      { retry: false, breaker: { consecutiveFailures: 5, breakDuration: 1000 } },
      () => true,
    );
    for (let i = 0; i < 5; i++) await fetch(server.url);
    expect(server.received).toHaveLength(5);
    failing = false;
    await clock.advance(1000);
    const results = Array.from({ length: 30 }, () => outcome(fetch(server.url)));
    await until(() => held.length === 1);
    await flush(10);
    expect(held).toHaveLength(1);
    held[0]!();
    const settled = await Promise.all(results);
    expect(settled.filter((r) => r === '200')).toHaveLength(1);
    expect(settled.filter((r) => r === 'STAUNCH_CIRCUIT_OPEN')).toHaveLength(29);
    expect(server.received).toHaveLength(6);
    expect(events.breaker.map((e) => `${e.from}>${e.to}`)).toEqual([
      'closed>open',
      'open>half-open',
      'half-open>closed',
    ]);
  });

  test('4xx and 429 never trip it', async () => {
    const server = await serve((_req, res, i) => {
      res.statusCode = i % 2 === 0 ? 404 : 429;
      res.end();
    });
    const { fetch, events } = setup({ retry: false, rateLimit: false });
    for (let i = 0; i < 60; i++) await fetch(server.url);
    expect(server.received).toHaveLength(60);
    expect(events.breaker).toEqual([]);
  });
});

describe('retry budget', () => {
  async function outage(options: Parameters<typeof client>[0]) {
    const server = await serve((_req, res) => {
      res.statusCode = 503;
      res.end();
    });
    const { fetch, clock, events } = setup({ retry: 4, ...options });
    const start = clock.now();
    const results = await Promise.all(
      Array.from({ length: 400 }, (_, i) => outcome(fetch(`${server.url}/${i}`))),
    );
    return { server, results, events, seconds: (clock.now() - start) / 1000 };
  }

  test('a full outage: the retries of 400 requests × 4 attempts go at the budget pace (10 % + 10/s), not 1,200 at once', async () => {
    const { server, results, events, seconds } = await outage({
      breaker: false,
      timeout: { total: 10_000 },
    });
    const floor = 10 * (1 + Math.ceil(seconds));
    expect(server.received.length).toBeGreaterThan(400);
    expect(server.received.length).toBeLessThanOrEqual(440 + floor);
    expect(results.every((r) => r === '503')).toBe(true);
    // A retry the budget cannot pay waits for it; those whose deadline could not see it give up.
    expect(events.giveUp.filter((e) => e.reason === 'budget').length).toBeGreaterThan(300);
  });

  test('with the defaults (breaker too): retries wait on the open circuit, one probe at a time', async () => {
    const { server, results, events, seconds } = await outage({ timeout: { total: 20_000 } });
    // The first attempts, the budget's retries before the circuit opened, then the probes,
    // nothing else: one at a time, with 400 waiting one per 60 ms (24 s ÷ 400, at least
    // PROBE_FLOOR_MS), with fewer than 96 waiting one per probeInterval.
    const probes = server.received.length - 440;
    expect(probes).toBeLessThanOrEqual(Math.ceil((seconds * 1000) / PROBE_FLOOR_MS));
    expect(probes).toBeGreaterThan((seconds * 1000) / breakerDefaults.probeInterval);
    // Every retry waited for a verdict that never came, and gave up when its deadline could
    // not reach the next probe.
    expect(results.every((r) => r === '503' || r === 'STAUNCH_CIRCUIT_OPEN')).toBe(true);
    expect(events.giveUp.some((e) => e.reason === 'circuit-open')).toBe(true);
  });

  test('without a budget, every attempt goes out', async () => {
    const { server } = await outage({ breaker: false, budget: false });
    expect(server.received).toHaveLength(1600);
  });
});

describe('rate limiter', () => {
  test('a fixed rate is what the server observes', async () => {
    const { fetch, clock } = setup({ rateLimit: { rps: 10, burst: 1 } });
    const arrivals: number[] = [];
    const server = await serve((_req, res) => {
      arrivals.push(clock.now());
      res.end();
    });
    await Promise.all(Array.from({ length: 30 }, () => fetch(server.url)));
    expect(arrivals).toHaveLength(30);
    const gaps = arrivals.slice(1).map((t, i) => t - arrivals[i]!);
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(99);
    expect(arrivals.at(-1)! - arrivals[0]!).toBeGreaterThanOrEqual(2900);
  });

  /**
   * A server with a quota of 40 requests per (virtual) second, answering 429
   * without any hint beyond it; 400 logical requests arriving at 80/s.
   */
  async function underQuota(options: Parameters<typeof client>[0]) {
    const { fetch, clock, events } = setup({
      retry: 6,
      timeout: { total: 60_000 },
      ...options,
    });
    const windows = new Map<number, number>();
    let tooMany = 0;
    const server = await serve((_req, res) => {
      const w = Math.floor(clock.now() / 1000);
      const n = (windows.get(w) ?? 0) + 1;
      windows.set(w, n);
      if (n > 40) {
        tooMany++;
        res.statusCode = 429;
      }
      res.end();
    });
    const start = clock.now();
    let last = start;
    const results = await Promise.all(
      Array.from({ length: 400 }, async (_, i) => {
        await clock.sleep(i * 12.5);
        const r = await outcome(fetch(`${server.url}/${i}`));
        if (r === '200') last = Math.max(last, clock.now());
        return r;
      }),
    );
    const ok = results.filter((r) => r === '200').length;
    const goodput = ok / ((last - start) / 1000);
    return { ok, tooMany, perSuccess: tooMany / ok, goodput, sent: server.received.length, events };
  }

  test('adaptive (the default) sends far fewer 429s per success than no limiter, and keeps the goodput', async () => {
    const plain = await underQuota({ rateLimit: false, budget: false });
    const adaptive = await underQuota({});
    expect(adaptive.perSuccess).toBeLessThan(plain.perSuccess / 2);
    expect(adaptive.ok).toBeGreaterThanOrEqual(Math.floor(plain.ok * 0.95));
    expect(adaptive.ok).toBeGreaterThanOrEqual(380);
    // 400 requests through a 40/s quota take at least 10 s: the limiter keeps close to that.
    expect(adaptive.goodput).toBeGreaterThan(0.85 * 40);
  });

  test('no budget starvation under a quota: 429 retries are paced, not charged', async () => {
    const waits = { adaptive: [] as string[], charged: [] as string[] };
    const adaptive = await underQuota({ on: { wait: (e) => waits.adaptive.push(e.reason) } });
    const charged = await underQuota({
      rateLimit: false,
      on: { wait: (e) => waits.charged.push(e.reason) },
    });
    // With the limiter, a retry after a 429 is pacing: never charged, never waiting for budget.
    expect(adaptive.events.giveUp.filter((e) => e.reason === 'budget')).toHaveLength(0);
    expect(waits.adaptive.filter((r) => r === 'budget')).toHaveLength(0);
    // Without it, each 429 retry is a retry of a failure: it waits for the budget.
    expect(waits.charged.filter((r) => r === 'budget').length).toBeGreaterThan(0);
    expect(adaptive.ok).toBeGreaterThanOrEqual(charged.ok);
    expect(adaptive.perSuccess).toBeLessThan(charged.perSuccess);
  });
});

describe('concurrency', () => {
  test('peak in flight, a full queue and a queue timeout', async () => {
    const held: (() => void)[] = [];
    let peak = 0;
    let inFlight = 0;
    const server = await serve((_req, res) => {
      inFlight++;
      peak = Math.max(peak, inFlight);
      held.push(() => {
        inFlight--;
        res.end();
      });
    });
    const { fetch, clock } = setup(
      { concurrency: { max: 2, queue: 3, queueTimeout: 1000 }, timeout: { attempt: 60_000 } },
      () => true,
    );
    const results = Array.from({ length: 6 }, (_, i) => outcome(fetch(`${server.url}/${i}`)));
    expect(await results[5]).toBe('STAUNCH_QUEUE_FULL');
    await until(() => held.length === 2);
    await flush(10);
    expect(server.received).toHaveLength(2);
    // The queued three time out after queueTimeout.
    await clock.advance(1000);
    expect(await Promise.all(results.slice(2, 5))).toEqual(Array(3).fill('STAUNCH_QUEUE_TIMEOUT'));
    for (const release of held.splice(0)) release();
    expect(await Promise.all(results.slice(0, 2))).toEqual(['200', '200']);
    expect(peak).toBe(2);
    // A slot freed is handed to the next waiter.
    const next = [
      outcome(fetch(server.url)),
      outcome(fetch(server.url)),
      outcome(fetch(server.url)),
    ];
    await until(() => held.length === 2);
    held.shift()!();
    await until(() => held.length === 2);
    for (const release of held.splice(0)) release();
    expect(await Promise.all(next)).toEqual(['200', '200', '200']);
    expect(peak).toBe(2);
    expect(new QueueFullError('x')).toBeInstanceOf(Error);
    expect(new QueueTimeoutError('x').code).toBe('STAUNCH_QUEUE_TIMEOUT');
  });
});
