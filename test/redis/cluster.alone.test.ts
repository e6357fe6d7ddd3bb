/**
 * Redis Cluster: three masters of our own, an ioredis `Cluster` client and a
 * node-redis `createCluster()` client. Each
 * script touches only its own key, so it runs on whichever node owns that
 * key's slot; a node that never saw a script answers NOSCRIPT and gets it.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { budgetDeposit } from '../../src/policy/budget/budget.js';
import { redisStore } from '../../src/redis/store.js';
import type { StoreStatus } from '../../src/store/store.js';
import { LIBRARIES, openCluster } from './helpers/clients.js';
import { type RedisServer, requireRedis, startRedis } from './helpers/redis-server.js';

const ready = requireRedis(true);

let nodes: RedisServer[] = [];
let dir: string;

function cli(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('redis-cli', args, { timeout: 30_000 }, (error, stdout, stderr) =>
      error
        ? reject(new Error(`redis-cli ${args.join(' ')}: ${stderr || error.message}`))
        : resolve(stdout),
    );
  });
}

beforeAll(async () => {
  if (!ready) return;
  dir = mkdtempSync(join(tmpdir(), 'staunch-cluster-'));
  const args = [
    '--cluster-enabled',
    'yes',
    '--cluster-config-file',
    join(dir, 'nodes-{port}.conf'),
  ];
  nodes = await Promise.all([startRedis(args), startRedis(args), startRedis(args)]);
  await cli([
    '--cluster',
    'create',
    ...nodes.map((n) => `127.0.0.1:${n.port}`),
    '--cluster-replicas',
    '0',
    '--cluster-yes',
  ]);
  for (let i = 0; ; i++) {
    const info = await Promise.all(
      nodes.map((n) => cli(['-p', String(n.port), 'cluster', 'info'])),
    );
    if (info.every((text) => text.includes('cluster_state:ok'))) break;
    if (i > 200) throw new Error('the cluster did not become ready');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}, 60_000);

afterAll(async () => {
  if (!ready) return;
  await Promise.all(nodes.map((n) => n.stop()));
  rmSync(dir, { recursive: true, force: true });
});

describe.runIf(ready).each(LIBRARIES)('redisStore on Redis Cluster, %s client', (library) => {
  it('runs every key’s script on the node that owns it', async () => {
    const cluster = await openCluster(
      library,
      nodes.map((n) => n.port),
    );
    try {
      // Each library on keys of its own: the count per node below is this run's.
      const prefix = `staunch-cluster-${library}:`;
      const store = redisStore({ client: cluster.client, prefix, timeout: 2_000 });
      const statuses: StoreStatus[] = [];
      store.onStatus((s) => statuses.push(s));
      const args = { ratio: 1, minPerSecond: 0, memoryMs: 600_000 };
      const keys = Array.from({ length: 60 }, (_, i) => `budget:https://host-${i}.example`);
      for (let round = 1; round <= 3; round++) {
        const balances = await Promise.all(keys.map((k) => store.run(k, budgetDeposit, args, 0)));
        for (const b of balances) expect(b).toBeCloseTo(round, 3);
      }
      expect(statuses).toEqual([]);
      // The keys really are spread over the three masters.
      const owners = await Promise.all(
        nodes.map(async (n) => {
          const found = await cli(['-p', String(n.port), '--scan', '--pattern', `${prefix}*`]);
          return found.split('\n').filter((line) => line !== '').length;
        }),
      );
      expect(owners.reduce((a, b) => a + b, 0)).toBe(keys.length);
      expect(owners.every((count) => count > 0)).toBe(true);
    } finally {
      cluster.end();
    }
  }, 60_000);
});
