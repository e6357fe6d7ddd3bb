/**
 * The executor's loop, driven through an in-memory exchange on the fake
 * clock: the order of its events, the delays it schedules (a server's hint
 * against the backoff's own sequence), the retry budget's charge, the wait
 * on an open circuit, the deadlines and the caller's abort.
 */
import { describe, expect, test } from 'vitest';
import { DeadlineExceededError } from '../../src/errors.js';
import { until } from '../helpers/clock.js';
import { coded, type Harness, harness, logical, ScriptedExchange } from './support.js';

/** The delays of the retries, as `retry` said them. */
const waits = (h: Harness) => h.of('retry').map((e) => e.delay);

describe('events', () => {
  test('retry is said when the retry is decided, with its delay, before the wait', async () => {
    const exchange = new ScriptedExchange([503, 200]);
    const h = harness({ random: () => 0.99 });
    const start = h.clock.now();
    await h.executor.run(logical(), exchange);
    expect(h.names()).toEqual([
      'attemptStart',
      'attempt',
      'retry',
      'wait',
      'attemptStart',
      'attempt',
      'end',
    ]);
    const [retry] = h.events.filter((e) => e.name === 'retry');
    // decorrelated backoff, first retry: U(250, 750) at 0.99.
    expect(retry!.event).toMatchObject({
      attempt: 1,
      delay: 745,
      delaySource: 'backoff',
      status: 503,
    });
    expect(waits(h)).toEqual([745]);
    // Said at the failure, before any time passed; the wait is said once it is over.
    expect(retry!.at).toBe(start);
    const [wait] = h.events.filter((e) => e.name === 'wait');
    expect(wait!.at).toBe(start + 745);
    expect(wait!.event).toMatchObject({ attempt: 2, reason: 'backoff', duration: 745 });
  });

  test('end is said once, with the attempts sent and the status handed back', async () => {
    const exchange = new ScriptedExchange([{ error: coded('ECONNRESET') }, 503, 200]);
    const h = harness();
    await h.executor.run(logical(), exchange);
    expect(h.of('end')).toEqual([
      expect.objectContaining({ attempts: 3, status: 200, method: 'GET' }),
    ]);
    expect(h.of('giveUp')).toEqual([]);
  });

  test('giveUp and end are said once each when the attempts run out', async () => {
    const exchange = new ScriptedExchange([500, 500]);
    const h = harness();
    const response = await h.executor.run(logical({ retry: { attempts: 2 } }), exchange);
    expect(response.status).toBe(500);
    expect(h.of('giveUp')).toEqual([
      expect.objectContaining({ attempts: 2, reason: 'attempts', status: 500 }),
    ]);
    expect(h.of('end')).toEqual([expect.objectContaining({ attempts: 2, status: 500 })]);
  });
});

describe('delays', () => {
  test("a server's hint is a floor for its own retry only: the next backoff starts from its own", async () => {
    // 429 with Retry-After: 1, then a 529: the 529's decorrelated backoff is drawn as if no
    // hint had come (U(250, 750)), not from U(250, 3 × the hinted delay).
    const exchange = new ScriptedExchange([
      { status: 429, headers: { 'retry-after': '1' } },
      529,
      200,
    ]);
    const h = harness({ random: () => 0.99 });
    await h.executor.run(logical(), exchange);
    expect(waits(h)).toEqual([1000 + 0.99 * 200, 745]);
  });

  test('the backoff sequence continues from its previous value across a hinted retry', async () => {
    const exchange = new ScriptedExchange([
      503,
      { status: 429, headers: { 'retry-after': '1' } },
      503,
      200,
    ]);
    const h = harness({ random: () => 0.99 });
    await h.executor.run(logical({ retry: { attempts: 4 } }), exchange);
    // 745 = U(250, 750); then the hint; then U(250, 3 × 745).
    expect(waits(h)).toEqual([745, 1000 + 0.99 * 200, 250 + 0.99 * (3 * 745 - 250)]);
    // …and each was waited, as `wait` said it.
    expect(h.of('wait').map((e) => e.reason)).toEqual(['backoff', 'server', 'backoff']);
  });

  test('the stale keep-alive race is resent at once and moves the backoff sequence nowhere', async () => {
    const stale = Object.assign(coded('ECONNRESET'), {
      [Symbol.for('staunch.staleConnection')]: true,
    });
    const exchange = new ScriptedExchange([{ error: stale }, 503, 200]);
    const h = harness({ random: () => 0.99 });
    await h.executor.run(logical(), exchange);
    expect(exchange.sent).toEqual([1, 2, 3]);
    expect(waits(h)).toEqual([0, 745]);
    expect(h.of('wait').map((e) => e.duration)).toEqual([745]);
  });
});

describe('the retry budget', () => {
  test('a retry of a failure is charged: an empty budget ends the request with giveUp budget', async () => {
    const exchange = new ScriptedExchange([503, 200]);
    const h = harness({ policies: { budget: { ratio: 0, minPerSecond: 0 } } });
    const response = await h.executor.run(logical(), exchange);
    expect(response.status).toBe(503);
    expect(exchange.sent).toEqual([1]);
    expect(h.of('giveUp')).toEqual([expect.objectContaining({ reason: 'budget', status: 503 })]);
  });

  test('first attempts earn retries: ratio 1 pays one retry, the next is refused', async () => {
    const exchange = new ScriptedExchange([503, 503, 200]);
    const h = harness({ policies: { budget: { ratio: 1, minPerSecond: 0 } } });
    const response = await h.executor.run(logical(), exchange);
    expect(response.status).toBe(503);
    expect(exchange.sent).toEqual([1, 2]);
    expect(h.of('giveUp').map((e) => e.reason)).toEqual(['budget']);
  });

  test('a retry after a 429 is not charged while the rate limiter bounds it', async () => {
    const exchange = new ScriptedExchange([{ status: 429, headers: { 'retry-after': '0' } }, 200]);
    const h = harness({
      policies: { budget: { ratio: 0, minPerSecond: 0 }, rateLimit: 'adaptive' },
    });
    const response = await h.executor.run(logical(), exchange);
    expect(response.status).toBe(200);
    expect(exchange.sent).toEqual([1, 2]);
  });

  test('an empty budget with a floor makes the retry wait for the floor to refill', async () => {
    const exchange = new ScriptedExchange([503, 503, 200]);
    const h = harness({ policies: { budget: { ratio: 0, minPerSecond: 1 } } });
    const response = await h.executor.run(logical(), exchange);
    expect(response.status).toBe(200);
    expect(exchange.sent).toEqual([1, 2, 3]);
    // The floor's one retry paid the first; the second waited a second's refill for its own.
    expect(h.of('wait').filter((e) => e.reason === 'budget')).toEqual([
      expect.objectContaining({ attempt: 3, duration: 1000 }),
    ]);
  });
});

describe('the circuit breaker', () => {
  test('a retry that meets an open circuit waits for the probe, uncharged', async () => {
    const exchange = new ScriptedExchange([503, 200]);
    const h = harness({
      policies: {
        breaker: { consecutiveFailures: 1, breakDuration: 1000 },
        budget: { ratio: 0, minPerSecond: 0 },
      },
    });
    const response = await h.executor.run(logical(), exchange);
    expect(response.status).toBe(200);
    expect(exchange.sent).toEqual([1, 2]);
    expect(h.of('wait').map((e) => e.reason)).toContain('circuit-open');
    expect(h.of('giveUp')).toEqual([]);
  });

  test('with retry: false an open circuit fails fast without sending', async () => {
    const h = harness({ policies: { breaker: { consecutiveFailures: 1, breakDuration: 1000 } } });
    await h.executor.run(logical({ retry: { attempts: 1 } }), new ScriptedExchange([503]));
    const exchange = new ScriptedExchange([200]);
    await expect(
      h.executor.run(logical({ retry: { attempts: 1 } }), exchange),
    ).rejects.toMatchObject({
      code: 'STAUNCH_CIRCUIT_OPEN',
    });
    expect(exchange.sent).toEqual([]);
    expect(h.of('giveUp').map((e) => e.reason)).toEqual(['attempts', 'circuit-open']);
    expect(h.of('end').at(-1)).toMatchObject({ attempts: 0, code: 'STAUNCH_CIRCUIT_OPEN' });
  });
});

describe('deadlines', () => {
  test('timeout.total ends a hung attempt: DeadlineExceededError, the attempt aborted', async () => {
    const exchange = new ScriptedExchange(['hang']);
    const h = harness();
    const start = h.clock.now();
    const error = await h.executor
      .run(logical({ timeout: { total: 1000 } }), exchange)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DeadlineExceededError);
    expect(error).toMatchObject({ timeout: 'total', ms: 1000 });
    expect((error as Error).message).toBe(
      'GET https://api.example.com/v1/items: request exceeded timeout.total (1000 ms)',
    );
    expect(h.clock.now() - start).toBe(1000);
    expect(exchange.signals[0]!.aborted).toBe(true);
    expect(h.of('giveUp')).toEqual([expect.objectContaining({ reason: 'deadline', attempts: 1 })]);
  });

  test('timeout.attempt ends each hung attempt, and the request goes on', async () => {
    const exchange = new ScriptedExchange(['hang', 'hang', 200]);
    const h = harness();
    const response = await h.executor.run(
      logical({ timeout: { attempt: 100, total: 10_000 } }),
      exchange,
    );
    expect(response.status).toBe(200);
    expect(exchange.sent).toEqual([1, 2, 3]);
    expect(exchange.signals.slice(0, 2).map((s) => s.aborted)).toEqual([true, true]);
    expect(h.of('attempt').map((e) => e.code)).toEqual([
      'STAUNCH_DEADLINE',
      'STAUNCH_DEADLINE',
      undefined,
    ]);
  });

  test('a backoff that cannot end before the deadline gives up at once', async () => {
    const exchange = new ScriptedExchange([503, 200]);
    const h = harness({ random: () => 0.99 });
    const response = await h.executor.run(logical({ timeout: { total: 500 } }), exchange);
    expect(response.status).toBe(503);
    expect(waits(h)).toEqual([]);
    expect(h.of('giveUp')).toEqual([expect.objectContaining({ reason: 'deadline', delay: 745 })]);
  });
});

describe("the caller's abort", () => {
  test('during an attempt: its own reason, at once, the attempt aborted', async () => {
    const controller = new AbortController();
    const exchange = new ScriptedExchange(['hang']);
    const h = harness();
    const run = h.executor.run(logical({ signal: controller.signal }), exchange);
    await Promise.resolve();
    const reason = new Error('caller gave up');
    controller.abort(reason);
    await expect(run).rejects.toBe(reason);
    expect(exchange.signals[0]!.aborted).toBe(true);
  });

  test('during a backoff: its own reason, at once, and no further attempt', async () => {
    const controller = new AbortController();
    const exchange = new ScriptedExchange([503, 200]);
    const h = harness({ manual: true });
    const reason = new Error('caller gave up');
    const run = h.executor.run(logical({ signal: controller.signal }), exchange);
    // The backoff of attempt 1 (U(250, 750) at 0.5) is pending.
    await until(() => h.clock.remaining().includes(500));
    controller.abort(reason);
    await expect(run).rejects.toBe(reason);
    expect(exchange.sent).toEqual([1]);
    expect(h.clock.remaining()).toEqual([]);
  });

  test('between the response and the backoff: its own reason, no backoff left pending', async () => {
    const controller = new AbortController();
    const exchange = new ScriptedExchange([503, 200]);
    const reason = new Error('caller gave up');
    // The `attempt` listener runs once the attempt settled, before the retry is decided.
    const h = harness({
      manual: true,
      tap: (name) => name === 'attempt' && controller.abort(reason),
    });
    await expect(h.executor.run(logical({ signal: controller.signal }), exchange)).rejects.toBe(
      reason,
    );
    expect(exchange.sent).toEqual([1]);
    expect(h.clock.remaining()).toEqual([]);
  });

  test('an already aborted signal sends nothing', async () => {
    const exchange = new ScriptedExchange([200]);
    const h = harness();
    const reason = new Error('too late');
    await expect(
      h.executor.run(logical({ signal: AbortSignal.abort(reason) }), exchange),
    ).rejects.toBe(reason);
    expect(exchange.sent).toEqual([]);
  });
});
