/**
 * Fleet state from the first request: 4 real processes each create their
 * client and fire at once, before it has connected (ioredis; the slow start
 * with node-redis too). The fixed rate
 * limit they share through Redis must hold fleet-wide from the first request:
 * the start (connection, first script loads) must not push them into local
 * state, where each process would have its own bucket.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RedisLibrary } from '../../src/redis/connect.js';
import { httpServer } from '../helpers/server.js';
import { LIBRARIES } from './helpers/clients.js';
import { compiledFleet, member } from './helpers/fleet.js';
import { type StallProxy, stallProxy } from './helpers/proxy.js';
import { type RedisServer, requireRedis, startRedis } from './helpers/redis-server.js';

const ready = requireRedis();
const PROCESSES = 4;
const REQUESTS = 30;
const RATE = { rps: 40, burst: 5 };
/**
 * Arrival jitter allowed for, in tokens: a token granted by Redis reaches the
 * upstream after a delay that varies on a loaded machine (scheduling of 4
 * processes on few cores); 0.5 s of the rate.
 */
const SLACK = RATE.rps * 0.5;

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

type Result = { counts: Record<string, number>; statuses: string[] };

/** Runs the fleet against a fresh upstream; returns what each member saw and the arrival times. */
async function run(
  redis: string,
  prefix: string,
  storeOptions: Record<string, unknown> = {},
  library: RedisLibrary = 'ioredis',
) {
  const arrivals: number[] = [];
  const upstream = await httpServer((_req, res) => {
    arrivals.push(performance.now());
    res.end();
  });
  try {
    const fleet = compiled.startFleet({
      processes: PROCESSES,
      module: member('fire-at-start'),
      input: {
        dist: compiled.dist,
        url: upstream.url,
        redis,
        library,
        prefix,
        storeOptions,
        requests: REQUESTS,
        rateLimit: RATE,
      } as never,
      timeout: 60_000,
    });
    try {
      const results = (await fleet.results) as Result[];
      const span = (arrivals.at(-1)! - arrivals[0]!) / 1000;
      return { results, sent: arrivals.length, span, bound: RATE.burst + RATE.rps * span + SLACK };
    } finally {
      await fleet.stop();
    }
  } finally {
    await upstream.close();
  }
}

describe.runIf(ready)('fleet state from the first request', () => {
  it(`4 processes × ${REQUESTS} requests fired at client creation: the fleet keeps ${RATE.rps} req/s`, async () => {
    const r = await run(server.url, `staunch-start-test:${process.pid}:direct:`);
    // Every request is sent (the limiter paces them, it does not refuse them).
    expect(r.sent).toBe(PROCESSES * REQUESTS);
    expect(r.results.map((m) => m.counts)).toEqual(Array(PROCESSES).fill({ 200: REQUESTS }));
    // One shared bucket: n sends need (n − burst) / rps seconds. Four local
    // buckets would send them in a quarter of that (bound ≈ 50 of 120).
    expect(r.sent).toBeLessThanOrEqual(r.bound);
    expect(r.results.map((m) => m.statuses)).toEqual(Array(PROCESSES).fill([]));
  }, 120_000);
});

describe.runIf(ready).each(LIBRARIES)('a slow start, %s clients', (library) => {
  it('a start slower than the decision timeout (Redis answers after 1 s) still shares from the first request', async () => {
    const proxy: StallProxy = await stallProxy(server.port);
    try {
      // Connections are accepted but nothing is answered until 1 s after the last
      // member connected: four times the decision timeout.
      proxy.stall();
      const resumed = proxy
        .connected(PROCESSES)
        .then(() => new Promise((resolve) => setTimeout(resolve, 1_000)))
        .then(() => proxy.resume());
      const prefix = `staunch-start-test:${process.pid}:${library}:slow:`;
      const r = await run(proxy.url, prefix, { timeout: 250 }, library);
      await resumed;
      expect(r.sent).toBe(PROCESSES * REQUESTS);
      expect(r.sent).toBeLessThanOrEqual(r.bound);
      expect(r.results.map((m) => m.statuses)).toEqual(Array(PROCESSES).fill([]));
    } finally {
      await proxy.close();
    }
  }, 120_000);
});
