/**
 * A success that carries only `RateLimit-Policy` (no `RateLimit` count)
 * teaches the dispatchers' adaptive limiter the quota, as it teaches the
 * core client: on undici 7 the attempt reads a success's headers raw, and
 * the policy must be among the names that read looks for. The client's clock
 * stands still, so a request that would have to wait for its turn at the
 * learnt pace is refused at once (its deadline is shorter than the turn).
 */
import { Agent, type Dispatcher, request } from 'undici';
import { describe, expect, test } from 'vitest';
import { RateLimitedError } from '../../src/errors.js';
import { createAgent, retryInterceptor } from '../../src/undici/index.js';
import { fakeClock } from '../helpers/clock.js';
import { httpServer, type TestServer } from '../helpers/server.js';
import { closeAfterEach } from './support.js';

const open = closeAfterEach();

/** Answers 200 with `policy` as its only rate-limit header. */
async function policyServer(policy: string): Promise<TestServer> {
  return open.add(
    await httpServer((_req, res) => {
      res.setHeader('ratelimit-policy', policy);
      res.end('ok');
    }),
  );
}

/** One request, then five at once: how each of the five ended. */
async function firstThenFive(url: string, dispatcher: Dispatcher) {
  const first = await request(url, { dispatcher });
  await first.body.text();
  return Promise.allSettled(
    Array.from({ length: 5 }, async (_, i) => {
      const res = await request(`${url}/${i}`, { dispatcher });
      await res.body.text();
      return res.statusCode;
    }),
  );
}

const settings = { retry: false, timeout: { total: 200 } } as const;

describe('RateLimit-Policy on a success, through the dispatchers', () => {
  test('createAgent: "q=2;w=1" learnt from the first answer refuses what cannot go within 200 ms', async () => {
    const server = await policyServer('"burst";q=2;w=1');
    const dispatcher = open.add(createAgent({ ...settings, clock: fakeClock() }));
    const five = await firstThenFive(server.url, dispatcher);
    const refused = five.filter((r) => r.status === 'rejected');
    expect(refused.length).toBeGreaterThanOrEqual(4);
    for (const r of refused)
      expect((r as PromiseRejectedResult).reason).toBeInstanceOf(RateLimitedError);
    expect(server.received).toHaveLength(6 - refused.length);
  });

  test('retryInterceptor: the same', async () => {
    const server = await policyServer('"burst";q=2;w=1');
    const dispatcher = open
      .add(new Agent())
      .compose(retryInterceptor({ ...settings, clock: fakeClock() }));
    const five = await firstThenFive(server.url, dispatcher);
    expect(five.filter((r) => r.status === 'rejected').length).toBeGreaterThanOrEqual(4);
    expect(server.received.length).toBeLessThanOrEqual(2);
  });

  test('without the policy all six go (the test can fail)', async () => {
    const server = open.add(await httpServer((_req, res) => res.end('ok')));
    const dispatcher = open.add(createAgent({ ...settings, clock: fakeClock() }));
    const five = await firstThenFive(server.url, dispatcher);
    expect(five.every((r) => r.status === 'fulfilled')).toBe(true);
    expect(server.received).toHaveLength(6);
  });
});
