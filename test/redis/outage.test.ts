/**
 * Redis killed in the middle of a run: requests go on against local state,
 * each client says so once (storeDegraded), and once Redis is back they say
 * so again (storeRecovered) and share their state again.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFetch, type StoreStatusEvent } from '../../src/index.js';
import {
  connectRedisStore,
  type RedisConnection,
  type RedisLibrary,
} from '../../src/redis/connect.js';
import { httpServer, type TestServer } from '../helpers/server.js';
import { LIBRARIES } from './helpers/clients.js';
import { type RedisServer, requireRedis, startRedis } from './helpers/redis-server.js';

const ready = requireRedis(true);

let server: RedisServer;
let upstream: TestServer;
let failing = false;

beforeAll(async () => {
  if (!ready) return;
  server = await startRedis();
  upstream = await httpServer((_req, res) => {
    res.statusCode = failing ? 503 : 200;
    res.end();
  });
});

afterAll(async () => {
  if (!ready) return;
  await upstream.close();
  await server.stop();
});

interface Member {
  name: string;
  connection: RedisConnection<unknown>;
  fetch: (url: string) => Promise<string>;
  events: string[];
  errors: string[];
}

// Only the outage may degrade the store, not a slow reply on a loaded test machine.
async function member(
  library: RedisLibrary,
  name: string,
  timeout = 1_000,
  run = 'kill',
): Promise<Member> {
  const connection = await connectRedisStore(server.url, {
    prefix: `staunch-outage-test:${process.pid}:${library}:${run}:`,
    probeInterval: 100,
    timeout,
    library,
  });
  const events: string[] = [];
  const errors: string[] = [];
  const record = (kind: string) => (e: StoreStatusEvent) => {
    events.push(kind);
    if (e.error !== undefined) errors.push(e.error);
  };
  const fetch = createFetch({
    store: connection.store,
    retry: false,
    budget: false,
    rateLimit: false,
    breaker: { consecutiveFailures: 3, breakDuration: 60_000 },
    on: { storeDegraded: record('degraded'), storeRecovered: record('recovered') },
  });
  return {
    name,
    connection,
    events,
    errors,
    fetch: (url) =>
      fetch(url).then(
        async (res) => {
          await res.arrayBuffer();
          return String(res.status);
        },
        (error: { code?: string }) => error.code ?? 'error',
      ),
  };
}

/** Lets the breaker's after-response record reach the store. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 100));

describe.runIf(ready).each(LIBRARIES)('Redis killed mid-run, %s client', (library) => {
  it('requests go on, events are emitted, and state is shared again after Redis returns', async () => {
    const a = await member(library, 'A');
    const b = await member(library, 'B');
    try {
      const url = (tag: string, i: number) => `${upstream.url}/${tag}/${i}`;
      for (let i = 0; i < 5; i++) {
        expect(await a.fetch(url('a', i))).toBe('200');
        expect(await b.fetch(url('b', i))).toBe('200');
      }
      expect(a.connection.store.status).toBe('shared');

      await server.kill();
      const before = upstream.received.length;
      const during = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          Promise.all([a.fetch(url('a', i)), b.fetch(url('b', i))]),
        ),
      );
      expect(during.flat().every((s) => s === '200')).toBe(true);
      expect(upstream.received.length - before).toBe(40);
      expect(a.events).toEqual(['degraded']);
      expect(b.events).toEqual(['degraded']);
      for (const error of [...a.errors, ...b.errors]) expect(error).toMatch(/^redis: /);

      // Meanwhile each process has its own breaker: A's failures do not protect B.
      failing = true;
      for (let i = 0; i < 3; i++) expect(await a.fetch(url('a-fail', i))).toBe('503');
      await settle();
      expect(await a.fetch(url('a-fail', 3))).toBe('STAUNCH_CIRCUIT_OPEN');
      expect(await b.fetch(url('b-fail', 0))).toBe('503');
      failing = false;

      await server.restart();
      const until = Date.now() + 15_000;
      let i = 0;
      while (a.connection.store.status !== 'shared' || b.connection.store.status !== 'shared') {
        if (Date.now() > until) throw new Error('the stores did not recover');
        await Promise.all([a.fetch(url('a-back', i)), b.fetch(url('b-back', i))]);
        i++;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(a.events).toEqual(['degraded', 'recovered']);
      expect(b.events).toEqual(['degraded', 'recovered']);

      // Shared again: A's failures open the circuit for B too.
      failing = true;
      for (let k = 0; k < 3; k++) expect(await a.fetch(url('a-shared', k))).toBe('503');
      await settle();
      const sent = upstream.received.length;
      expect(await b.fetch(url('b-shared', 0))).toBe('STAUNCH_CIRCUIT_OPEN');
      expect(upstream.received.length).toBe(sent);
      failing = false;
    } finally {
      await a.connection.close();
      await b.connection.close();
    }
  }, 60_000);
});

describe.runIf(ready).each(LIBRARIES)('Redis frozen mid-run (SIGSTOP), %s client', (library) => {
  it('requests go on, the key degrades once a decision waited 3 × timeout, once, and recovers after SIGCONT', async () => {
    const a = await member(library, 'A', 200, 'freeze');
    try {
      const url = (tag: string, i: number) => `${upstream.url}/${tag}/${i}`;
      for (let i = 0; i < 3; i++) expect(await a.fetch(url('warm', i))).toBe('200');
      expect(a.connection.store.status).toBe('shared');
      server.freeze();
      try {
        // The connection stays open and nothing is answered: each decision
        // times out (a strike), is made locally, and the request goes on.
        let sent = 0;
        while (a.connection.store.status === 'shared' && sent < 10) {
          expect(await a.fetch(url('frozen', sent))).toBe('200');
          sent++;
        }
        expect(a.events).toEqual(['degraded']);
        // A sequential client has one decision in flight: it waits 3 × timeout, then the key goes local.
        expect(a.errors).toEqual(['redis: no answer within 600 ms']);
        // Degraded: the next requests do not wait for Redis at all.
        for (let i = 0; i < 5; i++) expect(await a.fetch(url('local', i))).toBe('200');
        expect(a.events).toEqual(['degraded']);
      } finally {
        server.thaw();
      }
      for (let i = 0; i < 200 && a.connection.store.status !== 'shared'; i++) {
        await a.fetch(url('back', i));
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(a.events).toEqual(['degraded', 'recovered']);
    } finally {
      await a.connection.close();
    }
  }, 60_000);
});
