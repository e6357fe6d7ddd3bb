/**
 * Hedged requests through createFetch, against a real server that holds its
 * responses until the test answers them and counts the requests it received
 * and the connections closed before an answer (the aborted losers). The clock
 * is a test clock moved by hand while attempts are in flight: a hedge's delay
 * is read from what was scheduled on it, never from wall time.
 */
import type { ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import type { AttemptEvent, AttemptStartEvent, RequestEndEvent } from '../../src/events.js';
import { createFetch, memoryStore, type StaunchOptions } from '../../src/index.js';
import { type FakeClock, fakeClock, flush, until } from '../helpers/clock.js';
import { settled } from '../helpers/harness.js';
import { httpServer, type TestServer } from '../helpers/server.js';

let server: TestServer | undefined;
const held: (ServerResponse | undefined)[] = [];
afterEach(async () => {
  for (const res of held.splice(0)) res?.destroy();
  await server?.close();
  server = undefined;
});

/**
 * A server that answers request `i` with `answer(i)` at once (a status), or
 * holds it (`undefined`) until `reply(i, status)`. `closed`: the requests
 * whose connection closed before an answer.
 */
async function holding(answer: (index: number) => number | undefined = () => undefined) {
  const closed: number[] = [];
  server = await httpServer((_req, res, index) => {
    res.on('close', () => {
      if (!res.writableFinished) closed.push(index);
    });
    const status = answer(index);
    if (status === undefined) held[index] = res;
    else res.writeHead(status).end(`answer ${index}`);
  });
  const reply = (index: number, status = 200) =>
    held[index]!.writeHead(status).end(`answer ${index}`);
  return { server, closed, reply };
}

function client(options: Omit<StaunchOptions, 'clock'> = {}) {
  const clock: FakeClock = fakeClock();
  const starts: AttemptStartEvent[] = [];
  const attempts: AttemptEvent[] = [];
  const ends: RequestEndEvent[] = [];
  const fetch = createFetch({
    clock,
    random: () => 0.5,
    ...options,
    on: {
      attemptStart: (e) => starts.push(e),
      attempt: (e) => attempts.push(e),
      end: (e) => ends.push(e),
    },
  });
  const hedges = () => starts.filter((e) => e.hedge).length;
  return { fetch, clock, starts, attempts, ends, hedges };
}

describe('hedge (createFetch)', () => {
  it('sends a hedge after the delay; the fast answer wins, the first attempt is aborted', async () => {
    const { server, closed } = await holding((i) => (i === 0 ? undefined : 200));
    const c = client({ hedge: { delay: 50 } });
    const pending = c.fetch(server.url);
    await server.seen(1);
    expect(c.clock.sleeps).toContain(50);
    c.clock.advance(50);
    const res = await pending;
    expect(await res.text()).toBe('answer 1');
    expect(server.received).toHaveLength(2);
    await until(() => closed.length === 1);
    expect(closed).toEqual([0]);
    expect(c.starts.map((e) => [e.attempt, e.hedge])).toEqual([
      [1, undefined],
      [2, true],
    ]);
    expect(c.attempts.map((e) => [e.attempt, e.status, e.hedge, e.lost])).toEqual([
      [2, 200, true, undefined],
      [1, undefined, undefined, true],
    ]);
    expect(c.ends).toMatchObject([{ attempts: 2, status: 200, hedges: 1, won: 2 }]);
  });

  it('its events carry the URL redacted: a secret in the query is never said', async () => {
    const { server } = await holding((i) => (i === 0 ? undefined : 200));
    const c = client({ hedge: { delay: 50 } });
    const pending = c.fetch(`${server.url}/items?api_key=sentinel-s3cret`);
    await server.seen(1);
    c.clock.advance(50);
    expect((await pending).status).toBe(200);
    expect(c.hedges()).toBe(1);
    const said = JSON.stringify([c.starts, c.attempts, c.ends]);
    expect(said).toContain('api_key=***');
    expect(said).not.toContain('sentinel-s3cret');
  });

  it('the first attempt may still win: the hedge is aborted', async () => {
    const { server, closed, reply } = await holding();
    const c = client({ hedge: { delay: 50 } });
    const pending = c.fetch(server.url);
    await server.seen(1);
    c.clock.advance(50);
    await server.seen(2);
    reply(0);
    expect(await (await pending).text()).toBe('answer 0');
    await until(() => closed.length === 1);
    expect(closed).toEqual([1]);
    expect(c.ends).toMatchObject([{ attempts: 2, status: 200, hedges: 1, won: 1 }]);
  });

  it('a retryable failure while a hedge is in flight waits for the hedge, which wins', async () => {
    const { server, reply } = await holding();
    const c = client({ hedge: { delay: 50 } });
    const pending = c.fetch(server.url);
    await server.seen(1);
    c.clock.advance(50);
    await server.seen(2);
    reply(0, 503);
    await until(() => c.attempts.length === 1);
    await flush();
    const state = settled(pending);
    expect(state.done).toBe(false);
    expect(server.received).toHaveLength(2); // no retry: the hedge in flight is one
    reply(1, 200);
    expect((await pending).status).toBe(200);
    expect(server.received).toHaveLength(2);
    expect(c.attempts.map((e) => [e.attempt, e.status])).toEqual([
      [1, 503],
      [2, 200],
    ]);
    expect(c.ends).toMatchObject([{ status: 200, won: 2 }]);
  });

  it('a final response (a 404) wins at once; the attempt still in flight is aborted', async () => {
    const { server, closed } = await holding((i) => (i === 0 ? undefined : 404));
    const c = client({ hedge: { delay: 50 } });
    const pending = c.fetch(server.url);
    await server.seen(1);
    c.clock.advance(50);
    expect((await pending).status).toBe(404);
    await until(() => closed.length === 1);
    expect(closed).toEqual([0]);
    expect(server.received).toHaveLength(2);
    expect(c.ends).toMatchObject([{ status: 404, won: 2 }]);
  });

  it('the attempt timeout applies to each attempt: attempt 1 times out, its hedge answers', async () => {
    const { server, reply } = await holding();
    const c = client({ hedge: { delay: 50 }, timeout: { attempt: 80 } });
    const pending = c.fetch(server.url);
    await server.seen(1);
    c.clock.advance(50);
    await server.seen(2);
    c.clock.advance(30); // attempt 1's 80 ms are over, its hedge has 50 left
    await until(() => c.attempts.length === 1);
    expect(c.attempts[0]).toMatchObject({ attempt: 1, code: 'STAUNCH_DEADLINE' });
    reply(1);
    expect(await (await pending).text()).toBe('answer 1');
    expect(server.received).toHaveLength(2);
    // Each attempt armed its own 80 ms deadline; the hedge, 50 ms after the first.
    expect(c.clock.sleeps.filter((ms) => ms === 80)).toHaveLength(2);
  });

  it('no hedge when the delay outlives the total deadline', async () => {
    const { server, reply } = await holding();
    const c = client({ hedge: { delay: 150 }, timeout: { total: 100 } });
    const pending = c.fetch(server.url);
    await server.seen(1);
    expect(c.clock.sleeps).not.toContain(150);
    reply(0);
    expect((await pending).status).toBe(200);
  });
});

describe('no hedge', () => {
  /** Sends one request, moves the clock past the delay, answers the request held: one received. */
  async function once(
    options: Omit<StaunchOptions, 'clock'>,
    init: RequestInit & { staunch?: unknown } = {},
  ) {
    const { server, reply } = await holding();
    const c = client({ hedge: { delay: 50 }, ...options });
    const pending = c.fetch(server.url, init as never);
    await server.seen(1);
    c.clock.advance(50);
    await flush(20);
    expect(server.received).toHaveLength(1);
    expect(c.hedges()).toBe(0);
    reply(0);
    expect((await pending).status).toBe(200);
    expect(server.received).toHaveLength(1);
    return c;
  }

  it('for a POST without an idempotency key (not replayable): not even scheduled', async () => {
    const c = await once({}, { method: 'POST', body: 'order' });
    expect(c.clock.sleeps).not.toContain(50);
  });

  it('for a stream body, even on an idempotent method: not even scheduled', async () => {
    const body = new ReadableStream({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('chunk'));
        controller.close();
      },
    });
    const c = await once({}, { method: 'PUT', body, duplex: 'half' } as RequestInit);
    expect(c.clock.sleeps).not.toContain(50);
  });

  it('with hedge: false on the request, over the client hedging', async () => {
    const c = await once({}, { staunch: { hedge: false } });
    expect(c.clock.sleeps).not.toContain(50);
  });

  it('when the retry budget has no token now', async () => {
    await once({ budget: { ratio: 0, minPerSecond: 0 } });
  });

  it('while the rate limiter paces the key', async () => {
    await once({ rateLimit: { rps: 100 } });
  });

  it('when no attempt is left for it (retry: false)', async () => {
    const c = await once({ retry: false });
    expect(c.clock.sleeps).not.toContain(50);
  });

  it('while the circuit is half-open: the probe goes alone; once closed, hedging resumes', async () => {
    const failing = 2;
    const { server, reply } = await holding((i) => (i < failing ? 500 : i === 3 ? 200 : undefined));
    const c = client({
      hedge: { delay: 50 },
      breaker: { consecutiveFailures: failing, breakDuration: 1_000 },
    });
    for (let i = 0; i < failing; i++) {
      const res = await c.fetch(server.url, { staunch: { retry: false } } as never);
      expect(res.status).toBe(500);
    }
    c.clock.advance(1_000); // open → the next admission is the half-open probe
    const probe = c.fetch(server.url);
    await server.seen(failing + 1);
    c.clock.advance(50);
    await flush(20);
    expect(server.received).toHaveLength(failing + 1);
    expect(c.hedges()).toBe(0);
    reply(failing);
    expect((await probe).status).toBe(200);
    // The circuit closed: a slow request is hedged again (request 3 is the hedge, answered at once).
    const next = c.fetch(server.url);
    await server.seen(failing + 2);
    c.clock.advance(50);
    expect(await (await next).text()).toBe('answer 3');
    expect(c.hedges()).toBe(1);
  });
});

describe('the retry budget bounds hedges', () => {
  it('1,000 requests against an upstream slower than the delay: hedges ≤ 10 % of them + the floor', async () => {
    const n = 1_000;
    const { server, reply } = await holding();
    const c = client({ hedge: { delay: 50 } });
    const pending = Array.from({ length: n }, () => c.fetch(server.url));
    await server.seen(n);
    c.clock.advance(50); // every request's hedge is due at once
    await until(() => c.starts.length === n + c.hedges() && c.hedges() > 0);
    await flush(20);
    const hedges = c.hedges();
    await server.seen(n + hedges);
    // ratio 0.1 of the 1,000 first attempts, plus the floor's bank (minPerSecond 10: 10 tokens).
    expect(hedges).toBeLessThanOrEqual(0.1 * n + 10);
    expect(hedges).toBeGreaterThan(0.1 * n - 1);
    expect(server.received).toHaveLength(n + hedges);
    for (let i = 0; i < n + hedges; i++) reply(i);
    const statuses = await Promise.all(pending.map((p) => p.then((r) => r.status)));
    expect(statuses.every((s) => s === 200)).toBe(true);
    expect(server.received).toHaveLength(n + hedges);
  }, 60_000);
});

describe('the budget is shared through the store', () => {
  it("a hedge of one client spends the token another client's hedge then lacks", async () => {
    const { server, reply } = await holding();
    const clock = fakeClock();
    const store = memoryStore();
    // One token in all: a floor of 1 a second, nothing earned.
    const options = { clock, store, budget: { ratio: 0, minPerSecond: 1 }, hedge: { delay: 50 } };
    const a = createFetch(options);
    const b = createFetch(options);
    const first = a(server.url);
    await server.seen(1);
    clock.advance(50);
    await server.seen(2); // a's hedge took the token
    reply(1);
    expect((await first).status).toBe(200);
    const second = b(server.url);
    await server.seen(3);
    clock.advance(50);
    await flush(20);
    expect(server.received).toHaveLength(3); // b's request went alone
    reply(2);
    expect((await second).status).toBe(200);
  });
});

describe("delay: 'auto'", () => {
  /** Sends a request the server holds, moves the clock `ms` while in flight, answers it. */
  async function timed(
    c: ReturnType<typeof client>,
    reply: (i: number) => void,
    index: number,
    ms: number,
  ) {
    const pending = c.fetch(server!.url);
    await server!.seen(index + 1);
    c.clock.advance(ms);
    reply(index);
    expect((await pending).status).toBe(200);
  }

  it('no hedge before 20 successes; then the 95th percentile of their time to headers', async () => {
    const { reply } = await holding();
    const c = client({ hedge: {} });
    // 20 successes taking 5, 10, … 100 ms: nearest-rank p95 of 20 samples is the 19th, 95 ms.
    for (let i = 0; i < 20; i++) await timed(c, reply, i, 5 * (i + 1));
    // Only each attempt's own deadline was scheduled so far: no hedge timer.
    expect(c.clock.sleeps.filter((ms) => ms !== 60_000)).toEqual([]);
    const pending = c.fetch(server!.url);
    await server!.seen(21);
    expect(c.clock.sleeps.filter((ms) => ms !== 60_000)).toEqual([95]);
    c.clock.advance(95);
    await server!.seen(22);
    expect(c.hedges()).toBe(1);
    reply(21);
    expect((await pending).status).toBe(200);
  });

  it('never below minDelay', async () => {
    const { reply } = await holding();
    const c = client({ hedge: { percentile: 0.5, minDelay: 30 } });
    for (let i = 0; i < 20; i++) await timed(c, reply, i, 2);
    const pending = c.fetch(server!.url);
    await server!.seen(21);
    expect(c.clock.sleeps.filter((ms) => ms !== 60_000)).toEqual([30]);
    reply(20);
    expect((await pending).status).toBe(200);
  });
});
