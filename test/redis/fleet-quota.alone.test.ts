/**
 * Fleet adaptive limiting, the deterministic part: 4 processes share an
 * upstream that allows 40 requests per second (fixed one-second windows, 429
 * beyond, no hint) through the Redis store. What can be counted on a loaded
 * machine is asserted here: every request gets through, no process falls
 * back to local state, and the fleet learned one rate, in Redis. How the
 * shared fleet compares with local state (429s per success, goodput) is a
 * statistic: bench/redis-fleet.mjs quota, figures in docs/fleet.md.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpServer } from '../helpers/server.js';
import { LIBRARIES } from './helpers/clients.js';
import { compiledFleet, member } from './helpers/fleet.js';
import { type RedisServer, requireRedis, startRedis } from './helpers/redis-server.js';

const ready = requireRedis();
const QUOTA = 40;
const PROCESSES = 4;
// 4 × 25 requests/s offered: 2.5 × the quota.
const REQUESTS = 80;
const INTERVAL = 40;

let server: RedisServer;
let compiled: Awaited<ReturnType<typeof compiledFleet>>;

beforeAll(async () => {
  if (!ready) return;
  compiled = await compiledFleet();
  server = await startRedis();
}, 180_000);

afterAll(async () => {
  if (ready) await server.stop();
});

type Result = { counts: Record<string, number>; statuses: string[]; ms: number };

describe.runIf(ready).each(LIBRARIES)('fleet adaptive limiting, %s clients', (library) => {
  it(`4 processes at 2.5 × a ${QUOTA} req/s quota share one learned rate, and every request gets through`, async () => {
    const windows = new Map<number, number>();
    let tooMany = 0;
    const upstream = await httpServer((_req, res) => {
      const w = Math.floor(Date.now() / 1000);
      const n = (windows.get(w) ?? 0) + 1;
      windows.set(w, n);
      if (n > QUOTA) {
        tooMany++;
        res.statusCode = 429;
      }
      res.end();
    });
    const client = new Redis(server.url);
    const prefix = `staunch-quota-test:${process.pid}:${library}:`;
    try {
      const fleet = compiled.startFleet({
        processes: PROCESSES,
        module: member('quota'),
        store: server.url,
        // What is asserted here is sharing, not the fallback: a loaded test
        // machine must not push the members into local state.
        storeOptions: { prefix, timeout: 1_000, startupTimeout: 30_000, library },
        input: { dist: compiled.dist, url: upstream.url, requests: REQUESTS, interval: INTERVAL },
        timeout: 120_000,
      });
      const results = (await fleet.results) as Result[];
      await fleet.stop();
      expect(results.flatMap((m) => m.statuses)).toEqual([]);
      const succeeded = results.reduce((sum, r) => sum + (r.counts.ok ?? 0), 0);
      expect(succeeded).toBeGreaterThanOrEqual(PROCESSES * REQUESTS * 0.95);
      // The quota was hit (the limiter had something to learn) and the fleet
      // learned it in one Redis key, not one per process.
      expect(tooMany).toBeGreaterThan(0);
      const keys = await client.keys(`${prefix}{rate:*`);
      expect(keys).toHaveLength(1);
      // A learned rate (the state's shape is docs/policies.md's, not asserted here).
      expect(JSON.parse((await client.get(keys[0]!)) ?? 'null')).toBeTypeOf('object');
    } finally {
      client.disconnect();
      await upstream.close();
    }
  }, 120_000);
});
