/**
 * The optimistic first attempt (issue 12): attempt 1 leaves and a success
 * comes back without the retry loop. These pin down that nothing a caller or
 * an upstream can see differs from the loop's path: the events, the
 * deadlines, the caller's abort, the policies' state, the concurrency slots.
 */
import { getEventListeners } from 'node:events';
import { describe, expect, test } from 'vitest';
import { createFetch, DeadlineExceededError, QueueFullError } from '../../src/index.js';
import {
  type Json,
  type MemoryStore,
  memoryStore,
  type StateStore,
} from '../../src/store/index.js';
import { fakeClock, flush, until } from '../helpers/clock.js';
import { client, settled } from '../helpers/harness.js';
import { type RawServer, rawServer, statusServer, type TestServer } from '../helpers/server.js';
import { deferred } from '../helpers/stores.js';
import { closeAfterEach } from '../helpers/teardown.js';

const cleanup = closeAfterEach();

async function answering(statuses: number[]): Promise<TestServer> {
  return cleanup.add(await statusServer(statuses));
}

/** A server that reads the request and never answers. */
async function silent(): Promise<RawServer> {
  const server = await rawServer(() => {});
  cleanup.add(server);
  return server;
}

/** Every listener, logging `name:attempt[:status]` in the order the events come. */
function recorder() {
  const log: string[] = [];
  const on = {
    attemptStart: (e: { attempt: number }) => log.push(`attemptStart:${e.attempt}`),
    attempt: (e: { attempt: number; status?: number }) =>
      log.push(`attempt:${e.attempt}:${e.status ?? '-'}`),
    retry: (e: { attempt: number; status?: number }) =>
      log.push(`retry:${e.attempt}:${e.status ?? '-'}`),
    wait: (e: { attempt: number; reason: string }) => log.push(`wait:${e.attempt}:${e.reason}`),
    giveUp: (e: { attempts: number; reason: string }) =>
      log.push(`giveUp:${e.attempts}:${e.reason}`),
    end: (e: { attempts: number; status?: number }) =>
      log.push(`end:${e.attempts}:${e.status ?? '-'}`),
  };
  return { log, on };
}

describe('events with listeners present', () => {
  test('a first-attempt success says attemptStart, attempt, end, in that order', async () => {
    const server = await answering([200]);
    const { log, on } = recorder();
    const fetch = createFetch({ on });
    const res = await fetch(server.url);
    await res.text();
    expect(log).toEqual(['attemptStart:1', 'attempt:1:200', 'end:1:200']);
  });

  test('a 503 then a 200: the loop takes over after attempt 1 and says everything once', async () => {
    const server = await answering([503, 200]);
    const { log, on } = recorder();
    // Backoff sleeps pass by themselves; attempt deadlines only while nothing is in flight.
    const { fetch, stop } = client({ on });
    cleanup.defer(stop);
    const res = await fetch(server.url);
    expect(res.status).toBe(200);
    expect(log).toEqual([
      'attemptStart:1',
      'attempt:1:503',
      'retry:1:503',
      'wait:2:backoff',
      'attemptStart:2',
      'attempt:2:200',
      'end:2:200',
    ]);
  });

  test('a 404 on attempt 1 is handed back without a retry or a giveUp', async () => {
    const server = await answering([404]);
    const { log, on } = recorder();
    const res = await createFetch({ on })(server.url);
    expect(res.status).toBe(404);
    expect(log).toEqual(['attemptStart:1', 'attempt:1:404', 'end:1:404']);
  });
});

describe("attempt 1's deadlines, on a fake clock", () => {
  test('timeout.attempt ends attempt 1 at its limit, not a tick before', async () => {
    const server = await silent();
    const clock = fakeClock();
    const fetch = createFetch({ clock, retry: false, timeout: { attempt: 1_000, total: 5_000 } });
    const result = settled(fetch(server.url));
    await until(() => clock.remaining().length === 1);
    expect(clock.remaining()).toEqual([1_000]);
    await clock.advance(999);
    await flush(2);
    expect(result.done).toBe(false);
    await clock.advance(1);
    await until(() => result.done);
    expect(result.error).toBeInstanceOf(DeadlineExceededError);
    expect((result.error as DeadlineExceededError).timeout).toBe('attempt');
  });

  test('timeout.total bounds attempt 1 when it is the shorter', async () => {
    const server = await silent();
    const clock = fakeClock();
    const fetch = createFetch({ clock, retry: 3, timeout: { attempt: 5_000, total: 1_000 } });
    const result = settled(fetch(server.url));
    await until(() => clock.remaining().length === 1);
    expect(clock.remaining()).toEqual([1_000]);
    await clock.advance(1_000);
    await until(() => result.done);
    expect(result.error).toBeInstanceOf(DeadlineExceededError);
    expect((result.error as DeadlineExceededError).timeout).toBe('total');
    expect(clock.remaining()).toEqual([]);
  });

  test('an attempt-1 timeout goes on to attempt 2 after its backoff', async () => {
    const signals: AbortSignal[] = [];
    // A transport that hangs until aborted the first time, and answers the second.
    const transport = (_url: string, init: RequestInit): Promise<Response> => {
      const signal = init.signal!;
      signals.push(signal);
      if (signals.length > 1) return Promise.resolve(new Response('fine'));
      return new Promise((_resolve, reject) =>
        signal.addEventListener('abort', () => reject(signal.reason), { once: true }),
      );
    };
    const clock = fakeClock();
    const fetch = createFetch({
      clock,
      fetch: transport,
      random: () => 0.5,
      retry: 2,
      timeout: { attempt: 1_000, total: 60_000 },
    });
    const result = settled(fetch('http://127.0.0.1:9/x'));
    await until(() => clock.remaining().length === 1);
    await clock.advance(1_000);
    expect(signals[0]!.aborted).toBe(true);
    expect(signals[0]!.reason).toBeInstanceOf(DeadlineExceededError);
    // The backoff sleep, then attempt 2 answers.
    await until(() => clock.remaining().length === 1 && clock.remaining()[0]! !== 1_000);
    await clock.runNext();
    await until(() => result.done);
    expect((result.value as Response).status).toBe(200);
    expect(signals).toHaveLength(2);
    expect(clock.remaining()).toEqual([]);
  });
});

describe("the caller's abort during attempt 1", () => {
  test('rejects with the caller’s reason at once, aborts the transport, leaves no listener', async () => {
    const server = await silent();
    const clock = fakeClock();
    const store = memoryStore();
    const seen: AbortSignal[] = [];
    const fetch = createFetch({
      clock,
      store,
      fetch: (url, init) => {
        seen.push(init.signal!);
        return globalThis.fetch(url, init);
      },
    });
    const controller = new AbortController();
    const result = settled(fetch(server.url, { signal: controller.signal }));
    await until(() => seen.length === 1 && clock.remaining().length === 1);
    const reason = new Error('caller gave up');
    controller.abort(reason);
    await flush(2);
    expect(result).toMatchObject({ done: true, error: reason });
    expect(seen[0]!.aborted).toBe(true);
    expect(clock.remaining()).toEqual([]);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    // Not the upstream's failure: the breaker counted nothing.
    const breaker = store.peek(`breaker:${new URL(server.url).origin}`, clock.now());
    expect(breaker === undefined || (breaker as { buckets: unknown[] }).buckets.length === 0).toBe(
      true,
    );
  });
});

describe('policy state after successes', () => {
  test('the fast path leaves the store as the loop does', async () => {
    const server = await answering([200]);
    const origin = new URL(server.url).origin;
    const run = async (store: StateStore, clock: ReturnType<typeof fakeClock>) => {
      const fetch = createFetch({ clock, store });
      for (let i = 0; i < 30; i++) await (await fetch(server.url)).arrayBuffer();
      // Past a breaker bucket and a budget batch: the next request writes what was counted.
      await clock.advance(1_500);
      await (await fetch(server.url)).arrayBuffer();
      await flush(2);
    };
    const fastStore = memoryStore();
    const loopStore = memoryStore();
    const fastClock = fakeClock();
    const loopClock = fakeClock();
    await run(fastStore, fastClock);
    await run(deferred(loopStore), loopClock);
    const snapshot = (store: MemoryStore, now: number): Record<string, Json | undefined> => ({
      breaker: store.peek(`breaker:${origin}`, now),
      budget: store.peek(`budget:${origin}`, now),
      rate: store.peek(`rate:${origin}`, now),
    });
    const fast = snapshot(fastStore, fastClock.now());
    expect(fast).toEqual(snapshot(loopStore, loopClock.now()));
    // The comparison is of something: 30 successes in one bucket, 30 first attempts credited.
    const buckets = (fast.breaker as { buckets: [number, number, number][] }).buckets;
    expect(buckets.map(([, failures, successes]) => [failures, successes])).toEqual([[0, 30]]);
    expect((fast.budget as { earned: number }).earned).toBeGreaterThan(0);
  });

  test('a concurrency slot is given back by every first-attempt success', async () => {
    const server = await answering([200]);
    const fetch = createFetch({ concurrency: { max: 1, queue: 0 } });
    for (let i = 0; i < 10; i++) {
      const res = await fetch(server.url);
      await res.arrayBuffer();
    }
    // A slot still held would refuse this one: the queue takes nobody.
    const last = await fetch(server.url).catch((error: unknown) => error);
    expect(last).not.toBeInstanceOf(QueueFullError);
    expect((last as Response).status).toBe(200);
  });
});
