/**
 * `staunch lab --mode live --fleet P --store redis://…` end to end: the built
 * bin as a process, a real redis-server (test/redis/helpers/redis-server.ts:
 * skipped loudly without one, a failure under CI=true), the live upstream
 * and P fleet members as child processes.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisServer, requireRedis, startRedis } from '../redis/helpers/redis-server.js';

const ready = requireRedis();
const root = resolve(import.meta.dirname, '../..');
const dir = mkdtempSync(join(tmpdir(), 'staunch-lab-fleet-'));
const dist = join(dir, 'dist');
let redis: RedisServer;

beforeAll(async () => {
  if (!ready) return;
  // Emits even if another module of the tree does not typecheck yet; the lab's files must be there.
  spawnSync(
    process.execPath,
    [join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json', '--outDir', dist],
    { cwd: root, stdio: 'ignore' },
  );
  for (const f of ['cli/index.js', 'lab/fleet/member.js', 'lab/fleet/child.js']) {
    if (!existsSync(join(dist, f))) throw new Error(`build did not produce ${f}`);
  }
  // ioredis resolves from the build's parent directory.
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'), 'dir');
  redis = await startRedis();
}, 180_000);

afterAll(async () => {
  if (ready) await redis.stop();
  rmSync(dir, { recursive: true, force: true });
});

function run(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [join(dist, 'cli/index.js'), ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    const timer = setTimeout(() => child.kill(), 110_000);
    child.on('error', fail);
    child.on('close', (code) => {
      clearTimeout(timer);
      done({ code, out, err });
    });
  });
}

describe.runIf(ready)('staunch lab --fleet', () => {
  it('runs 3 processes with local state, then with the shared Redis store, and compares them', async () => {
    const requests = 150;
    const r = await run([
      'lab',
      ...['--mode', 'live', '--fleet', '3', '--store', redis.url, '--json'],
      ...['--requests', String(requests), '--capacity', '50', '--span', '3000'],
      ...['--deadline', '20000'],
    ]);
    expect(r.code, r.err).toBe(0);
    const json = JSON.parse(r.out);
    expect(json).toMatchObject({ mode: 'live', capacity: 50, requests });
    expect(json.fleet).toMatchObject({ processes: 3, store: redis.url });
    expect(json.fleet.phases.map((p: { name: string }) => p.name)).toEqual(['local', 'shared']);
    expect(json.strategies.map((s: { name: string }) => s.name)).toEqual(['local', 'shared']);
    for (const s of json.strategies) {
      for (const key of ['success', 'goodput', 'attemptsPerRequest', 'tooManyRequests']) {
        expect(typeof s[key], `${s.name}.${key}`).toBe('number');
      }
      expect(s.tooManyPerSuccess === null || typeof s.tooManyPerSuccess === 'number').toBe(true);
      // Every logical request was issued and reached the upstream at least once.
      expect(s.serverArrivals, s.name).toBeGreaterThanOrEqual(requests);
      expect(s.attemptsPerRequest).toBeGreaterThanOrEqual(1);
      // Both runs completed: the lab's own time limit cut nothing short.
      expect(s.outcomes['lab-time-limit'] ?? 0, s.name).toBe(0);
      expect(s.success, s.name).toBeGreaterThan(0.5);
    }
    expect(r.err).toContain('fleet shared done');
    // Keys went to the run's own prefix in the shared phase.
    const keys = spawnSync('redis-cli', ['-p', String(redis.port), '--scan'], { encoding: 'utf8' });
    if (keys.status === 0 && redis.owned) {
      for (const key of keys.stdout.split('\n').filter(Boolean)) {
        expect(key).toMatch(/^staunch-lab:[\w-]+:shared:\{/);
      }
    }
  }, 120_000);
});
