/** redisStore against a real redis-server: keys, expiry, Redis time, scripts by SHA, fallback. */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { breakerAdmit } from '../../src/policy/breaker/ops.js';
import { budgetDeposit } from '../../src/policy/budget/budget.js';
import { rateAcquire } from '../../src/policy/rate/ops.js';
import { connectRedisStore } from '../../src/redis/connect.js';
import { redactError } from '../../src/redis/redact.js';
import { SCRIPTS } from '../../src/redis/scripts.js';
import { createRedisStore, redisStore } from '../../src/redis/store.js';
import type { StoreStatus } from '../../src/store/store.js';
import { closedPort } from '../helpers/server.js';
import { LIBRARIES, openClient, type TestClient } from './helpers/clients.js';
import { stallProxy } from './helpers/proxy.js';
import { type RedisServer, requireRedis, startRedis } from './helpers/redis-server.js';

const ready = requireRedis();
/** What each library says of a connection whose handshake Redis never answers. */
const STILL_CONNECTING = { ioredis: 'connect', 'node-redis': 'open' } as const;
const budgetArgs = { ratio: 0.1, minPerSecond: 10, memoryMs: 10_000 };
const fixed = {
  rps: 10,
  burst: 2,
  memoryMs: 300_000,
  beta: 0.7,
  scale: 0.4,
  minRate: 0.5,
  burstSeconds: 0.1,
  holdoffMs: 1000,
};

let server: RedisServer;
let client: Redis;
let basePrefix: string;

beforeAll(async () => {
  if (!ready) return;
  server = await startRedis();
  client = new Redis(server.url);
  basePrefix = `staunch-store-test:${process.pid}:`;
});

afterAll(async () => {
  if (!ready) return;
  await client.quit();
  await server.stop();
});

async function commandCalls(name: string): Promise<number> {
  const info = await client.info('commandstats');
  const m = new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(info);
  return m ? Number(m[1]) : 0;
}

describe('redisStore options', () => {
  it('rejects bad options at construction, naming the option and the value', () => {
    expect(() => redisStore({} as never)).toThrow(TypeError);
    expect(() => redisStore({ client: {} as never })).toThrow(
      /redisStore\.client must be an ioredis client/,
    );
    // A node-redis look-alike missing `isReady` is neither library's client.
    const half = { evalSha: async () => '', eval: async () => '', ping: async () => 'PONG' };
    expect(() => redisStore({ client: half as never })).toThrow(
      /or a node-redis client \(createClient or createCluster\), got an object/,
    );
    const c = { evalsha: async () => '', eval: async () => '', ping: async () => 'PONG' };
    expect(() => redisStore({ client: c, prefix: 'a{b}:' })).toThrow(RangeError);
    expect(() => redisStore({ client: c, prefix: 7 as never })).toThrow(
      /redisStore\.prefix must be a string, got 7/,
    );
    expect(() => redisStore({ client: c, timeout: 0 })).toThrow(
      /redisStore\.timeout must be a number > 0, got 0/,
    );
    expect(() => redisStore({ client: c, timeout: Number.NaN })).toThrow(TypeError);
    expect(() => redisStore({ client: c, probeInterval: -1 })).toThrow(RangeError);
    expect(() => redisStore({ client: c, startupTimeout: -5 })).toThrow(
      /redisStore\.startupTimeout must be a number > 0, got -5/,
    );
    expect(() => redisStore({ client: c, retries: 3 } as never)).toThrow(
      /retries is not an option/,
    );
  });

  it('connectRedisStore names a library it does not know, before connecting', async () => {
    await expect(
      connectRedisStore('redis://127.0.0.1:1', { library: 'redis' as never }),
    ).rejects.toThrow(/connectRedisStore\.library must be 'ioredis' or 'node-redis', got "redis"/);
  });

  it('has one script per store operation, and refuses an operation it has no script for', () => {
    expect([...SCRIPTS.keys()].sort()).toEqual([
      'staunch.breaker.admit',
      'staunch.breaker.record',
      'staunch.budget.deposit',
      'staunch.budget.withdraw',
      'staunch.rate.acquire',
      'staunch.rate.feedback',
      'staunch.rate.refund',
    ]);
    for (const script of SCRIPTS.values()) {
      // One key per script, the one in KEYS: what Redis Cluster needs.
      expect(script.source.match(/KEYS\[\d+\]/g)?.every((k) => k === 'KEYS[1]')).toBe(true);
    }
    const c = { evalsha: async () => '', eval: async () => '', ping: async () => 'PONG' };
    const op = { name: 'custom.op', apply: () => ({ state: 1, ttl: 1, result: 1 }) };
    expect(() => redisStore({ client: c }).run('k', op, null, 0)).toThrow(
      /no script for the operation "custom.op"/,
    );
  });

  it('redacts credentials from the errors it reports', () => {
    const error = new Error('connect to redis://admin:hunter2secret@db.internal:6379 failed');
    expect(redactError(error, [])).toBe('redis: connect to redis://***@db.internal:6379 failed');
    expect(redactError(new Error('WRONGPASS for pw-5678'), ['pw-5678'])).toBe(
      'redis: WRONGPASS for ***',
    );
  });
});

describe.runIf(ready).each(LIBRARIES)('redisStore on a real Redis, %s client', (library) => {
  /** The client under test; `client` (ioredis) inspects Redis. */
  let own: TestClient;
  /** Each library's run on keys of its own. */
  let prefix: string;
  beforeAll(async () => {
    prefix = `${basePrefix}${library}:`;
    own = openClient(library, server.url);
    await own.connected;
  });
  afterAll(() => own.end());
  /** A client of this library through `proxy`, connecting. */
  const via = (proxy: { url: string }): TestClient => openClient(library, proxy.url);

  it('keeps each key under its hash tag with an expiry, on Redis time, whatever the caller says', async () => {
    // Generous timeouts here: a loaded test machine must not send these decisions to the fallback.
    const store = redisStore({ client: own.client, prefix, timeout: 5_000 });
    const key = 'budget:https://api.example.com';
    const balance = await store.run(key, budgetDeposit, budgetArgs, 0);
    expect(balance).toBeCloseTo(10.1, 10);
    const redisKey = store.redisKey(key);
    expect(redisKey).toBe(`${prefix}{budget:https://api.example.com}`);
    const [seconds] = await client.time();
    const state = JSON.parse((await client.get(redisKey)) ?? 'null');
    expect(state.floor).toBe(10);
    expect(Math.abs(state.at - Number(seconds) * 1000)).toBeLessThan(5_000);
    const pttl = await client.pttl(redisKey);
    expect(pttl).toBeGreaterThan(25_000);
    expect(pttl).toBeLessThanOrEqual(30_000);
    // An empty array stays an array in the stored JSON.
    await store.run(
      'breaker:x',
      breakerAdmit,
      {
        cfg: {
          failureRatio: 0.5,
          minimumVolume: 1,
          window: 1000,
          breakDuration: 100,
          maxBreakDuration: 100,
          halfOpenProbes: 1,
          consecutiveFailures: 0,
          probeInterval: 1_000,
        },
        leaseMs: 100,
      },
      0,
    );
    expect(await client.exists(store.redisKey('breaker:x'))).toBe(0);
  });

  it('loads each script once, calls it by SHA, and reloads it after SCRIPT FLUSH', async () => {
    const store = redisStore({ client: own.client, prefix, timeout: 5_000 });
    const statuses: StoreStatus[] = [];
    store.onStatus((s) => statuses.push(s));
    const acquire = SCRIPTS.get('staunch.rate.acquire')!;
    await client.script('FLUSH');
    await client.config('RESETSTAT');
    const args = { cfg: fixed, maxWait: null, epoch: null };
    await store.run('rate:sha', rateAcquire, args, 0);
    expect(await client.script('EXISTS', acquire.sha)).toEqual([1]);
    for (let i = 0; i < 10; i++) await store.run('rate:sha', rateAcquire, args, 0);
    expect(await commandCalls('eval')).toBe(1);
    expect(await commandCalls('evalsha')).toBe(11);
    await client.script('FLUSH');
    const after = await store.run('rate:sha', rateAcquire, args, 0);
    expect(after.ok).toBe(true);
    expect(await commandCalls('eval')).toBe(2);
    expect(await client.script('EXISTS', acquire.sha)).toEqual([1]);
    expect(statuses).toEqual([]);
    expect(store.status).toBe('shared');
  });

  it('the first use of a script is its load, not a slow reply: concurrent first uses wait and send the source once', async () => {
    const proxy = await stallProxy(server.port);
    const viaProxy = via(proxy);
    try {
      await viaProxy.connected;
      const store = redisStore({ client: viaProxy.client, prefix, timeout: 50 });
      const statuses: StoreStatus[] = [];
      store.onStatus((s) => statuses.push(s));
      await client.script('FLUSH');
      await client.config('RESETSTAT');
      // Redis answers nothing for 300 ms, six times the decision timeout.
      proxy.stall();
      const resumed = new Promise<void>((resolve) =>
        setTimeout(() => {
          proxy.resume();
          resolve();
        }, 300),
      );
      const balances = await Promise.all(
        Array.from({ length: 10 }, () => store.run('budget:load', budgetDeposit, budgetArgs, 0)),
      );
      await resumed;
      expect(statuses).toEqual([]);
      // Every deposit reached the one shared balance: 10 + 10 × 0.1 (less a trace of decay on Redis time).
      expect(Math.max(...balances)).toBeCloseTo(11, 3);
      expect(await commandCalls('eval')).toBe(1);
      expect(await commandCalls('evalsha')).toBe(19);
    } finally {
      viaProxy.end();
      await proxy.close();
    }
  });

  it('a slow Redis: a late answer is used, one slow spell is one strike, three in a row send the key local', async () => {
    const proxy = await stallProxy(server.port);
    const viaProxy = via(proxy);
    try {
      await viaProxy.connected;
      // A reply later than 200 ms is a strike; a decision waits for it up to 600 ms.
      const { client: proxied } = viaProxy;
      const store = redisStore({ client: proxied, prefix, timeout: 200, probeInterval: 100 });
      const statuses: StoreStatus[] = [];
      store.onStatus((s) => statuses.push(s));
      const args = { cfg: { ...fixed, rps: 0.001, burst: 2 }, maxWait: 0, epoch: null };
      const take = (key: string) => store.run(key, rateAcquire, args, Date.now());
      /** Redis answers nothing for 350 ms while `during` runs. */
      const slowly = async <T>(during: () => T | Promise<T>): Promise<T> => {
        proxy.stall();
        const resume = setTimeout(() => proxy.resume(), 350);
        try {
          return await during();
        } finally {
          clearTimeout(resume);
          proxy.resume();
        }
      };
      expect((await take('rate:stall')).ok).toBe(true);
      expect((await take('rate:other')).ok).toBe(true);
      // Five decisions in flight together during one slow spell: Redis's late
      // answers are used (its bucket has 1 token left; a local one would grant
      // 2), one strike, the key stays shared.
      const together = await slowly(() =>
        Promise.all(Array.from({ length: 5 }, () => take('rate:stall'))),
      );
      expect(together.map((r) => r.ok).sort()).toEqual([false, false, false, false, true]);
      expect(statuses).toEqual([]);
      expect(store.status).toBe('shared');
      // A second slow reply, sent after the first strike: still Redis's answer, the bucket is empty.
      expect((await slowly(() => take('rate:stall'))).ok).toBe(false);
      expect(statuses).toEqual([]);
      // The third strike in a row: the key goes local, this decision with it (a fresh local bucket).
      expect((await slowly(() => take('rate:stall'))).ok).toBe(true);
      const error = 'redis: no answer within 200 ms, 3 times in a row';
      expect(statuses).toEqual([{ status: 'degraded', error }]);
      expect(store.status).toBe('degraded');
      // Degraded: that key is answered synchronously from memory, no second event.
      const local = take('rate:stall');
      expect(local).not.toBeInstanceOf(Promise);
      expect(local).toMatchObject({ ok: true });
      expect(statuses).toHaveLength(1);
      // Only that key is local: another key is still decided in Redis, where one
      // of its 2 tokens is gone (a local bucket would grant both).
      const other = [await take('rate:other'), await take('rate:other')];
      expect(other.map((r) => r.ok)).toEqual([true, false]);
      for (let i = 0; i < 200 && store.status === 'degraded'; i++) {
        await take('rate:stall');
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      expect(statuses).toEqual([{ status: 'degraded', error }, { status: 'recovered' }]);
      // Shared again: the key is decided in Redis, whose bucket is still empty.
      expect(await take('rate:stall')).toMatchObject({ ok: false });
      expect(store.status).toBe('shared');
    } finally {
      viaProxy.end();
      await proxy.close();
    }
  });

  it('a frozen Redis: a decision unanswered for 3 × timeout sends its key local at once', async () => {
    const proxy = await stallProxy(server.port);
    const viaProxy = via(proxy);
    try {
      await viaProxy.connected;
      const { client: proxied } = viaProxy;
      const store = redisStore({ client: proxied, prefix, timeout: 100, probeInterval: 100 });
      const statuses: StoreStatus[] = [];
      store.onStatus((s) => statuses.push(s));
      const args = { cfg: fixed, maxWait: 0, epoch: null };
      expect((await store.run('rate:frozen', rateAcquire, args, Date.now())).ok).toBe(true);
      proxy.stall();
      expect((await store.run('rate:frozen', rateAcquire, args, Date.now())).ok).toBe(true);
      expect(statuses).toEqual([{ status: 'degraded', error: 'redis: no answer within 300 ms' }]);
      expect(store.run('rate:frozen', rateAcquire, args, Date.now())).not.toBeInstanceOf(Promise);
    } finally {
      viaProxy.end();
      await proxy.close();
    }
  });

  it('a client that never gets an answer: the first decisions wait the start-up timeout, then all go local', async () => {
    const proxy = await stallProxy(server.port);
    proxy.stall();
    // Connected (TCP), but the ready check is never answered: ioredis stays in `connect`.
    const viaProxy = via(proxy);
    try {
      const store = redisStore({
        client: viaProxy.client,
        prefix,
        timeout: 50,
        startupTimeout: 400,
      });
      const statuses: StoreStatus[] = [];
      store.onStatus((s) => statuses.push(s));
      const args = { cfg: fixed, maxWait: 0, epoch: null };
      const first = await Promise.all(
        Array.from({ length: 3 }, () => store.run('rate:start', rateAcquire, args, Date.now())),
      );
      expect(first.map((r) => r.ok)).toEqual([true, true, false]);
      expect(viaProxy.state()).toBe(STILL_CONNECTING[library]);
      expect(statuses).toEqual([
        { status: 'degraded', error: 'redis: no answer within the start-up timeout of 400 ms' },
      ]);
      // Every key, not only the one that waited.
      expect(store.run('budget:start', budgetDeposit, budgetArgs, 1_000)).toBeCloseTo(10.1, 10);
    } finally {
      viaProxy.end();
      await proxy.close();
    }
  });

  it('connectRedisStore: connects from a URL, and never shows its password', async () => {
    const connection = await connectRedisStore(server.url, { prefix, timeout: 5_000, library });
    try {
      expect(await connection.store.run('budget:url', budgetDeposit, budgetArgs, 0)).toBeCloseTo(
        10.1,
        10,
      );
    } finally {
      await connection.close();
    }
    const port = await closedPort();
    const url = `redis://admin:hunter2secret@127.0.0.1:${port}`;
    const failure = await connectRedisStore(url, { connectTimeout: 500, library }).catch(
      (e: Error) => e,
    );
    expect(failure).toBeInstanceOf(Error);
    expect(String((failure as Error).message)).toContain(`redis://***@127.0.0.1:${port}`);
    expect(String((failure as Error).message)).not.toContain('hunter2secret');
    await expect(connectRedisStore('http://x', { library })).rejects.toThrow(TypeError);
  });
});

it('a client error carrying a password is reported without it', async () => {
  const client = {
    evalsha: () =>
      Promise.reject(new Error('AUTH failed for redis://u:pa55word@h:6379 (pa55word)')),
    eval: () => Promise.reject(new Error('unused')),
    ping: () => Promise.reject(new Error('down')),
  };
  const store = createRedisStore({ client }, { secrets: ['pa55word'] });
  const statuses: StoreStatus[] = [];
  store.onStatus((s) => statuses.push(s));
  const balance = await store.run('budget:k', budgetDeposit, budgetArgs, 1_000);
  expect(balance).toBeCloseTo(10.1, 10);
  expect(statuses).toEqual([
    { status: 'degraded', error: 'redis: AUTH failed for redis://***@h:6379 (***)' },
  ]);
});
