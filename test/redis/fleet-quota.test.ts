/**
 * Fleet adaptive limiting, measured: 4 processes share an upstream that
 * allows 40 requests per second (fixed one-second windows, 429 beyond, no
 * hint). With local state each process learns its own share; with the
 * shared store they learn one rate together. The shared fleet must get
 * fewer 429s per success.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpServer } from '../helpers/server.js';
import { compiledRedis, member } from './helpers/fleet.js';
import { type RedisServer, requireRedis, startRedis } from './helpers/redis-server.js';

const ready = requireRedis();
const QUOTA = 40;
const PROCESSES = 4;
// 4 × 25 requests/s offered: 2.5 × the quota.
const REQUESTS = Number(process.env.FLEET_QUOTA_REQUESTS ?? 80);
const INTERVAL = Number(process.env.FLEET_QUOTA_INTERVAL ?? 40);

let server: RedisServer;
let compiled: Awaited<ReturnType<typeof compiledRedis>>;

beforeAll(async () => {
  if (!ready) return;
  compiled = await compiledRedis();
  server = await startRedis();
}, 180_000);

afterAll(async () => {
  if (ready) await server.stop();
});

type Result = { counts: Record<string, number>; statuses: string[]; ms: number };

async function run(store: 'local' | 'redis', prefix: string) {
  const windows = new Map<number, number>();
  let tooMany = 0;
  let ok = 0;
  const upstream = await httpServer((_req, res) => {
    const w = Math.floor(Date.now() / 1000);
    const n = (windows.get(w) ?? 0) + 1;
    windows.set(w, n);
    if (n > QUOTA) {
      tooMany++;
      res.statusCode = 429;
    } else ok++;
    res.end();
  });
  try {
    const fleet = compiled.redis.startFleet({
      processes: PROCESSES,
      module: member('quota'),
      store: store === 'local' ? 'local' : server.url,
      // What is measured here is sharing, not the fallback: a loaded test
      // machine must not push the members into local state.
      storeOptions: { prefix, timeout: 1_000 },
      input: { dist: compiled.dist, url: upstream.url, requests: REQUESTS, interval: INTERVAL },
      timeout: 120_000,
    });
    const results = (await fleet.results) as Result[];
    await fleet.stop();
    const succeeded = results.reduce((sum, r) => sum + (r.counts.ok ?? 0), 0);
    const ms = Math.max(...results.map((r) => r.ms));
    const goodput = (ok / ms) * 1000;
    return { tooMany, ok, succeeded, perSuccess: tooMany / ok, ms, goodput, results };
  } finally {
    await upstream.close();
  }
}

describe.runIf(ready)('fleet adaptive limiting', () => {
  it(`4 processes against a ${QUOTA} req/s upstream: fewer 429s per success with the shared store`, async () => {
    // Two runs of each, in the order local, shared, shared, local: one run
    // of four independent learners varies a lot with how early each engages.
    const prefix = (i: number) => `staunch-quota-test:${process.pid}:${i}:`;
    const runs = [
      await run('local', 'unused:'),
      await run('redis', prefix(1)),
      await run('redis', prefix(2)),
      await run('local', 'unused:'),
    ];
    const local = [runs[0]!, runs[3]!];
    const shared = [runs[1]!, runs[2]!];
    const total = (list: typeof runs) => {
      const tooMany = list.reduce((sum, r) => sum + r.tooMany, 0);
      const ok = list.reduce((sum, r) => sum + r.ok, 0);
      return { tooMany, ok, perSuccess: tooMany / ok };
    };
    const line = (name: string, r: (typeof runs)[number]) =>
      `  ${name}: ${r.tooMany} × 429 for ${r.ok} successes (${r.perSuccess.toFixed(3)} per success), ${r.ms} ms, ${r.goodput.toFixed(1)} successes/s`;
    console.info(
      [
        `fleet quota (${PROCESSES} processes × ${REQUESTS} requests every ${INTERVAL} ms, quota ${QUOTA}/s):`,
        line('local ', runs[0]!),
        line('shared', runs[1]!),
        line('shared', runs[2]!),
        line('local ', runs[3]!),
      ].join('\n'),
    );
    for (const r of shared) expect(r.results.flatMap((m) => m.statuses)).toEqual([]);
    // Both deliver (nearly) everything: the comparison is about the cost.
    for (const r of runs) expect(r.succeeded).toBeGreaterThanOrEqual(PROCESSES * REQUESTS * 0.95);
    expect(total(shared).perSuccess).toBeLessThan(total(local).perSuccess);
  }, 300_000);
});
