/**
 * The generic hooks of the core that staunch/llm is built on: `classify`
 * (the retry table refined per response, a `kind` on the events), `pacing`
 * (rate-limit headers beyond the standard ones), `hold` (a wait before an
 * attempt), `retryCountHeader` (one retry layer) and the string body in the
 * policy key's request.
 */
import { describe, expect, test } from 'vitest';
import {
  type AttemptEvent,
  createFetch,
  type GiveUpEvent,
  type OuterRetryEvent,
  type PolicyRequest,
  RateLimitedError,
  type RetryEvent,
  type WaitEvent,
} from '../../src/index.js';
import { fakeClock, flush, until } from '../helpers/clock.js';
import { client } from '../helpers/harness.js';
import { scriptServer } from '../helpers/server.js';
import { closeAfterEach } from '../helpers/teardown.js';

const open = closeAfterEach();

/** A server answering `statuses[i]` (the last one repeats), with `headers` on each. */
async function answers(statuses: number[], headers: Record<string, string> = {}) {
  return open.add(
    await scriptServer({
      script: statuses.map((status) => ({ status, headers, body: 'body' })),
      after: { status: statuses.at(-1)!, headers, body: 'body' },
    }),
  );
}

describe('classify', () => {
  test('can make a POST retry a 503 (any), and label the events with a kind', async () => {
    const server = await answers([503, 503, 200]);
    const retries: RetryEvent[] = [];
    const attempts: AttemptEvent[] = [];
    const c = client({
      classify: ({ status, scope }) =>
        status === 503 ? { scope: 'any', kind: 'busy' } : { scope },
      on: { retry: (e) => retries.push(e), attempt: (e) => attempts.push(e) },
    });
    open.defer(c.stop);
    const res = await c.fetch(server.url, { method: 'POST', body: 'x' });
    expect(res.status).toBe(200);
    expect(server.received).toHaveLength(3);
    expect(retries.map((e) => e.kind)).toEqual(['busy', 'busy']);
    expect(attempts.map((e) => e.kind)).toEqual(['busy', 'busy', undefined]);
  });

  test('sees the table verdict, and can turn a retryable status into a final one', async () => {
    const server = await answers([429]);
    const seen: string[] = [];
    const giveUps: GiveUpEvent[] = [];
    const c = client({
      classify: ({ scope, method, status }) => {
        seen.push(`${method} ${status} ${scope}`);
        return { scope: 'never', kind: 'quota' };
      },
      on: { giveUp: (e) => giveUps.push(e) },
    });
    open.defer(c.stop);
    const res = await c.fetch(server.url);
    expect(res.status).toBe(429);
    expect(await res.text()).toBe('body');
    expect(server.received).toHaveLength(1);
    expect(seen).toEqual(['GET 429 any']);
    expect(giveUps).toEqual([]);
  });

  test('is not called for a success; a hook that throws or answers junk changes nothing', async () => {
    for (const hook of [
      () => {
        throw new Error('bug');
      },
      () => 'any' as never,
      () => ({ scope: 'sometimes' as never, kind: 'x'.repeat(65) }),
    ]) {
      const server = await answers([503, 200]);
      const c = client({ classify: hook });
      open.defer(c.stop);
      expect((await c.fetch(server.url)).status).toBe(200);
      expect(server.received).toHaveLength(2); // a GET 503: replayable, retried by the table
      const post = await answers([503, 200]);
      expect((await c.fetch(post.url, { method: 'POST', body: 'x' })).status).toBe(503);
      expect(post.received).toHaveLength(1);
    }
  });

  test('a kind on the giveUp event', async () => {
    const server = await answers([503]);
    const giveUps: GiveUpEvent[] = [];
    const c = client({
      retry: 2,
      classify: () => ({ kind: 'down' }),
      on: { giveUp: (e) => giveUps.push(e) },
    });
    open.defer(c.stop);
    await c.fetch(server.url);
    expect(giveUps).toMatchObject([{ reason: 'attempts', status: 503, kind: 'down' }]);
  });
});

describe('pacing', () => {
  test('a window spent by a custom header holds the key until its reset', async () => {
    const server = await answers([200], { 'x-quota-left': '0', 'x-quota-reset-s': '30' });
    const clock = fakeClock();
    const fetch = createFetch({
      clock,
      pacing: (headers) => {
        const left = (headers as Headers).get('x-quota-left');
        const reset = Number((headers as Headers).get('x-quota-reset-s')) * 1000;
        return left === '0' ? { remaining: 0, reset, delay: reset } : undefined;
      },
    });
    await fetch(server.url);
    const second = fetch(server.url);
    await until(() => clock.remaining().includes(30_000));
    await flush();
    expect(server.received).toHaveLength(1);
    await clock.advance(30_000);
    await second;
    expect(server.received).toHaveLength(2);
  });

  test('its delay paces a retry when no standard header does; the standard ones win', async () => {
    const reader = () => ({ delay: 4000 });
    for (const [headers, expected, source] of [
      [{}, 4000, 'custom'],
      [{ 'retry-after': '2' }, 2000, 'retry-after'],
    ] as const) {
      const server = await answers([429, 200], headers);
      const retries: RetryEvent[] = [];
      const c = client({ pacing: reader, random: () => 0, on: { retry: (e) => retries.push(e) } });
      open.defer(c.stop);
      await c.fetch(server.url);
      expect(retries).toMatchObject([{ delaySource: source }]);
      expect(c.clock.sleeps).toContain(expected);
    }
  });

  test('a reader that throws or answers junk reads nothing', async () => {
    const server = await answers([200, 200]);
    const c = client({
      pacing: () => ({ remaining: -1, reset: Number.NaN, delay: Infinity }) as never,
    });
    open.defer(c.stop);
    await c.fetch(server.url);
    await c.fetch(server.url);
    const d = client({
      pacing: () => {
        throw new Error('bug');
      },
    });
    open.defer(d.stop);
    await d.fetch(server.url);
    expect(server.received).toHaveLength(3);
  });
});

describe('retryCountHeader', () => {
  test("staunch's own retries carry the true retry index", async () => {
    const server = await answers([503, 503, 200]);
    const c = client({ retryCountHeader: 'x-retry-count' });
    open.defer(c.stop);
    await c.fetch(server.url, { headers: { 'x-retry-count': '0' } });
    expect(server.received.map((r) => r.headers['x-retry-count'])).toEqual(['0', '1', '2']);
  });

  test('a request that arrives above 0 is sent once, and so is every later one with the header; said once', async () => {
    const server = await answers([503]);
    const outer: OuterRetryEvent[] = [];
    const c = client({
      retryCountHeader: 'x-retry-count',
      on: { outerRetry: (e: OuterRetryEvent) => outer.push(e) },
    });
    open.defer(c.stop);
    await c.fetch(`${server.url}/a?api_key=hidden`, { headers: { 'x-retry-count': '1' } });
    expect(server.received).toHaveLength(1);
    await c.fetch(server.url, { headers: { 'x-retry-count': '2' } });
    await c.fetch(server.url, { headers: { 'x-retry-count': '0' } });
    expect(server.received).toHaveLength(3);
    expect(outer).toHaveLength(1);
    expect(outer[0]).toMatchObject({ method: 'GET', header: 'x-retry-count', value: 1 });
    expect(outer[0]!.url).not.toContain('hidden');
    // A request without the header is not another layer's: retried as usual.
    await c.fetch(server.url);
    expect(server.received).toHaveLength(6);
  });

  test('validated', () => {
    expect(() => createFetch({ retryCountHeader: 'bad header' })).toThrow(
      new TypeError('retryCountHeader must be a header name, got "bad header"'),
    );
    expect(() => createFetch({ retryCountHeader: 5 as never })).toThrow(TypeError);
  });
});

describe('hold', () => {
  test('its answer is waited out as a rate-limit wait, then it is asked again', async () => {
    const server = await answers([200]);
    const clock = fakeClock();
    const asked: { key: string; body: string | undefined; now: number }[] = [];
    const answers_ = [5000, 0];
    const waits: WaitEvent[] = [];
    const fetch = createFetch({
      clock,
      rateLimit: false,
      breaker: false,
      budget: false,
      hold: ({ key, body }, now) => {
        asked.push({ key, body, now });
        return answers_.shift();
      },
      on: { wait: (e) => waits.push(e) },
    });
    const call = fetch(server.url, { method: 'POST', body: 'abc' });
    await until(() => clock.remaining().includes(5000));
    await flush();
    expect(server.received).toHaveLength(0);
    await clock.advance(5000);
    await call;
    expect(server.received).toHaveLength(1);
    const start = asked[0]!.now;
    expect(asked).toEqual([
      { key: new URL(server.url).origin, body: 'abc', now: start },
      { key: new URL(server.url).origin, body: 'abc', now: start + 5000 },
    ]);
    expect(waits).toMatchObject([{ reason: 'rate-limit', duration: 5000, attempt: 1 }]);
  });

  test.each([
    ['0', () => 0],
    ['NaN', () => Number.NaN],
    ['-5', () => -5],
    ['Infinity', () => Number.POSITIVE_INFINITY],
    ['a string', () => '100' as never],
    [
      'a throw',
      () => {
        throw new Error('no');
      },
    ],
  ])('%s holds nothing', async (_name, hold) => {
    const server = await answers([200]);
    const clock = fakeClock();
    const fetch = createFetch({ clock, hold });
    await fetch(server.url);
    expect(server.received).toHaveLength(1);
    expect(clock.sleeps.filter((ms) => ms !== 60_000)).toEqual([]);
  });

  test('a hold past the deadline is a RateLimitedError at once', async () => {
    const server = await answers([200]);
    const clock = fakeClock();
    const giveUps: GiveUpEvent[] = [];
    const fetch = createFetch({
      clock,
      timeout: { total: 1000, attempt: false },
      hold: () => 1001,
      on: { giveUp: (e) => giveUps.push(e) },
    });
    const error = await fetch(server.url).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitedError);
    expect((error as RateLimitedError).retryAfter).toBe(1001);
    expect(clock.sleeps).toEqual([]);
    expect(server.received).toHaveLength(0);
    expect(giveUps).toMatchObject([{ reason: 'rate-limited', attempts: 0 }]);
  });

  test("the caller's abort ends the hold", async () => {
    const server = await answers([200]);
    const clock = fakeClock();
    const fetch = createFetch({ clock, hold: () => 10_000 });
    const controller = new AbortController();
    const call = fetch(server.url, { signal: controller.signal }).catch((e: unknown) => e);
    await until(() => clock.remaining().includes(10_000));
    controller.abort(new Error('stop'));
    expect(await call).toMatchObject({ message: 'stop' });
    expect(server.received).toHaveLength(0);
  });
});

describe('hook options are validated', () => {
  test.each(['classify', 'pacing', 'hold'])('%s must be a function', (name) => {
    expect(() => createFetch({ [name]: 'x' })).toThrow(
      new TypeError(`${name} must be a function, got "x"`),
    );
  });
});

test('the policy key sees a string body, and no other', async () => {
  const server = await answers([200]);
  const seen: (string | undefined)[] = [];
  const key = (request: PolicyRequest) => {
    seen.push(request.body);
    return 'k';
  };
  const c = client({ key });
  open.defer(c.stop);
  await c.fetch(server.url, { method: 'POST', body: '{"model":"m"}' });
  await c.fetch(server.url, { method: 'POST', body: new Uint8Array([1]) });
  await c.fetch(server.url);
  expect(seen).toEqual(['{"model":"m"}', undefined, undefined]);
});
