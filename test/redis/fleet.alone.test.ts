/**
 * The fleet shares one state: real child processes (compiled JavaScript),
 * one real redis-server, one real HTTP upstream; once with ioredis clients,
 * once with node-redis clients (the members' and the test's own store).
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BreakerConfig, breakerAdmit, breakerRecord } from '../../src/policy/breaker/ops.js';
import type { RedisLibrary } from '../../src/redis/connect.js';
import { createRedisStore, type RedisStore } from '../../src/redis/store.js';
import { httpServer, type TestServer } from '../helpers/server.js';
import { LIBRARIES, openClient, type TestClient } from './helpers/clients.js';
import { compiledFleet, member } from './helpers/fleet.js';
import { type RedisServer, requireRedis, startRedis } from './helpers/redis-server.js';

const ready = requireRedis();

let server: RedisServer;
/** Inspects Redis (ioredis, whatever the library under test). */
let client: Redis;
/** The library under test: the members' clients and `store`'s. */
let library: RedisLibrary;
let own: TestClient | undefined;
let store: RedisStore;
let startFleet: Awaited<ReturnType<typeof compiledFleet>>['startFleet'];
let dist: string;
let prefix: string;

beforeAll(async () => {
  if (!ready) return;
  ({ startFleet, dist } = await compiledFleet());
  server = await startRedis();
  client = new Redis(server.url);
}, 180_000);

afterAll(async () => {
  if (!ready) return;
  await client.quit();
  await server.stop();
});

/** Points the suite at `lib`: its own keys, its own client for `store`. */
async function use(lib: RedisLibrary): Promise<void> {
  own?.end();
  library = lib;
  prefix = `staunch-fleet-test:${process.pid}:${lib}:`;
  own = openClient(lib, server.url);
  await own.connected;
  store = createRedisStore({ client: own.client, prefix, timeout: 5_000 });
}

/** Runs `processes` members of `name` against the shared store and returns their results. */
async function fleet<T>(
  name: string,
  processes: number,
  input: Record<string, unknown>,
  kind: 'redis' | 'local' = 'redis',
) {
  const running = startFleet({
    processes,
    module: member(name),
    store: kind === 'redis' ? server.url : 'local',
    storeOptions: { prefix, timeout: 5_000, startupTimeout: 30_000, library },
    input: { dist, ...input } as never,
    timeout: 60_000,
  });
  try {
    return (await running.results) as T[];
  } finally {
    await running.stop();
  }
}

const breakerCfg: BreakerConfig = {
  failureRatio: 0.5,
  minimumVolume: 20,
  window: 10_000,
  breakDuration: 300,
  maxBreakDuration: 60_000,
  halfOpenProbes: 1,
  consecutiveFailures: 3,
  probeInterval: 1_000,
};

describe.runIf(ready).each(LIBRARIES)('a fleet on one Redis, %s clients', (lib) => {
  beforeAll(() => use(lib));
  afterAll(() => own?.end());

  it('atomicity: 4 processes × 500 concurrent takes from a bucket of 1,000 → exactly 1,000 granted', async () => {
    type R = { granted: number; statuses: unknown[] };
    // 0.001 token/s: no refill worth a token during the run.
    const cfg = {
      rps: 0.001,
      burst: 1000,
      memoryMs: 300_000,
      beta: 0.7,
      scale: 0.4,
      minRate: 0.5,
      burstSeconds: 0.1,
      holdoffMs: 1000,
    };
    const results = await fleet<R>('take-tokens', 4, { key: 'rate:atomic', cfg, takes: 500 });
    expect(results.map((r) => r.statuses)).toEqual([[], [], [], []]);
    expect(results.reduce((sum, r) => sum + r.granted, 0)).toBe(1000);
    // The same fleet on local state: four buckets of 1,000, every take granted.
    const local = await fleet<R>(
      'take-tokens',
      4,
      { key: 'rate:atomic', cfg, takes: 500 },
      'local',
    );
    expect(local.reduce((sum, r) => sum + r.granted, 0)).toBe(2000);
  }, 120_000);

  it('shared breaker: failures seen by process A open the circuit for process B', async () => {
    let hits = 0;
    const upstream: TestServer = await httpServer((_req, res) => {
      hits++;
      res.statusCode = 503;
      res.end();
    });
    try {
      type R = { counts: Record<string, number>; changes: string[] };
      const breaker = { consecutiveFailures: 3, breakDuration: 60_000 };
      const base = { url: upstream.url, breaker, tag: 'shared' };
      const [a] = await fleet<R>('breaker', 1, { ...base, requests: 3 });
      expect(a?.counts).toEqual({ 503: 3 });
      expect(a?.changes).toEqual(['closed>open']);
      expect(hits).toBe(3);
      const [b] = await fleet<R>('breaker', 1, { ...base, requests: 5 });
      expect(b?.counts).toEqual({ STAUNCH_CIRCUIT_OPEN: 5 });
      expect(hits).toBe(3);
    } finally {
      await upstream.close();
    }
  }, 120_000);

  it('shared half-open: 4 processes × 20 concurrent callers → exactly one probe', async () => {
    const release: (() => void)[] = [];
    const upstream = await httpServer((_req, res) => {
      // Hold the probe until every caller has been answered, then let it succeed.
      release.push(() => res.end('ok'));
    });
    try {
      const key = `breaker:${upstream.url}`;
      const breaker = { consecutiveFailures: 3, breakDuration: 300 };
      const now = Date.now();
      const cfg = { ...breakerCfg, ...breaker };
      for (let i = 0; i < 3; i++) {
        const r = await store.run(
          key,
          breakerRecord,
          { cfg, gen: 0, probe: null, outcome: 'failure' },
          now,
        );
        if (i === 2) expect(r.change).toEqual(['closed', 'open']);
      }
      // Let the 300 ms break pass: the circuit is due for its probe.
      await new Promise((resolve) => setTimeout(resolve, 400));
      type R = { counts: Record<string, number>; changes: string[] };
      const running = startFleet({
        processes: 4,
        module: member('breaker'),
        store: server.url,
        storeOptions: { prefix, timeout: 5_000, startupTimeout: 30_000, library },
        input: {
          dist,
          url: upstream.url,
          breaker,
          tag: 'half-open',
          requests: 20,
          redis: server.url,
          refused: `${prefix}refused`,
        } as never,
        timeout: 60_000,
      });
      await upstream.seen(1);
      // Every refused caller gives up at once; the probe is still held by the server.
      const refused = await waitFor(async () => {
        const s = JSON.parse((await client.get(store.redisKey(key))) ?? '{}');
        return s.state === 'half-open' ? s : undefined;
      });
      expect(refused.probes).toHaveLength(1);
      // Hold the probe until the 79 others have been answered, however late a member started.
      await waitFor(
        async () => (Number(await client.get(`${prefix}refused`)) >= 79 ? true : undefined),
        60_000,
      );
      for (const r of release) r();
      const results = (await running.results) as R[];
      await running.stop();
      const counts: Record<string, number> = {};
      for (const r of results)
        for (const [k, n] of Object.entries(r.counts)) counts[k] = (counts[k] ?? 0) + n;
      expect(counts).toEqual({ 200: 1, STAUNCH_CIRCUIT_OPEN: 79 });
      expect(upstream.received).toHaveLength(1);
      expect(results.flatMap((r) => r.changes).sort()).toEqual([
        'half-open>closed',
        'open>half-open',
      ]);
    } finally {
      await upstream.close();
    }
  }, 120_000);

  it('a probe lease outlives a dead holder only until it expires', async () => {
    const key = 'breaker:lease';
    const cfg = { ...breakerCfg, breakDuration: 100 };
    const now = Date.now();
    for (let i = 0; i < 3; i++) {
      await store.run(key, breakerRecord, { cfg, gen: 0, probe: null, outcome: 'failure' }, now);
    }
    await new Promise((resolve) => setTimeout(resolve, 150));
    const leaseMs = 3_000;
    await expect(fleet('hold-probe', 1, { key: `${key}`, cfg, leaseMs })).rejects.toThrow(
      /SIGKILL/,
    );
    // The holder is dead without reporting: its slot stays taken until the lease ends…
    const held = await store.run(key, breakerAdmit, { cfg, leaseMs }, Date.now());
    expect(held.ok).toBe(false);
    if (held.ok) return;
    expect(held.retryAfter).toBeGreaterThan(0);
    expect(held.retryAfter).toBeLessThanOrEqual(leaseMs);
    // …then the next caller becomes the probe.
    const next = await waitFor(async () => {
      const r = await store.run(key, breakerAdmit, { cfg, leaseMs }, Date.now());
      return r.ok ? r : undefined;
    });
    expect(next.probe).not.toBeNull();
    expect(next.change).toBeNull();
  }, 60_000);
});

async function waitFor<T>(check: () => Promise<T | undefined>, ms = 20_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error('waitFor: condition not met');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
