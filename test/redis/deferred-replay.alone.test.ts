/**
 * examples/deferred-replay against a real Redis (BullMQ) and a real HTTP
 * server that counts requests per idempotency key: requests staunch gave up
 * on are queued without their secrets and replayed once with the same key
 * and the worker's credentials.
 */
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Queue, type Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  deferGiveUps,
  type ReplayRequest,
  replayWorker,
} from '../../examples/deferred-replay/replay-queue.mjs';
import { createFetch } from '../../src/index.js';
import { httpServer, type TestServer } from '../helpers/server.js';
import { compiledDist } from './helpers/build.js';
import { type RedisServer, requireRedis, startRedis } from './helpers/redis-server.js';

const ready = requireRedis();

let server: RedisServer;
let connection: Redis;

beforeAll(async () => {
  if (!ready) return;
  server = await startRedis();
  connection = new Redis(server.url, { maxRetriesPerRequest: null });
});

afterAll(async () => {
  if (!ready) return;
  connection.disconnect();
  await server.stop();
});

describe.runIf(ready)('examples/deferred-replay', () => {
  it('queues what gave up, then replays each request once with the same key', async () => {
    let down = true;
    const perKey = new Map<string, number>();
    const upstream: TestServer = await httpServer((req, res) => {
      const key = String(req.headers['idempotency-key'] ?? '');
      perKey.set(key, (perKey.get(key) ?? 0) + 1);
      res.statusCode = down ? 503 : 201;
      res.end();
    });
    const name = `replay-test-${process.pid}-${Date.now()}`;
    const queue = new Queue(name, { connection });
    let worker: Worker | undefined;
    try {
      const fetch = createFetch({
        retry: { attempts: 2 },
        on: { giveUp: deferGiveUps(queue) },
      });
      const post = (id: string, body: string | Uint8Array) =>
        fetch(`${upstream.url}/charges`, {
          method: 'POST',
          headers: { authorization: 'Bearer client-secret', 'x-trace': id },
          body,
          idempotencyKey: id,
        });
      const bytes = new Uint8Array([0, 1, 2, 250, 255]);
      expect((await post('order-1', '{"amount":4200}')).status).toBe(503);
      expect((await post('order-2', bytes)).status).toBe(503);
      // The same order given up twice is one job.
      expect((await post('order-1', '{"amount":4200}')).status).toBe(503);
      const waiting = await until(async () => {
        const jobs = await queue.getJobs(['waiting']);
        return jobs.length === 2 ? jobs : undefined;
      });
      const queued = waiting.map((job) => job.data as ReplayRequest);
      expect(JSON.stringify(queued)).not.toContain('client-secret');
      expect(queued.map((r) => r.idempotencyKey).sort()).toEqual(['order-1', 'order-2']);
      expect(Object.fromEntries(perKey)).toEqual({ 'order-1': 4, 'order-2': 2 });

      down = false;
      const before = upstream.received.length;
      const completed: string[] = [];
      worker = replayWorker({
        connection,
        queueName: name,
        fetch: createFetch({ retry: false }),
        credentials: () => [['authorization', 'Bearer worker-secret']],
      });
      worker.on('completed', (job) => completed.push(String(job.data.idempotencyKey)));
      await until(async () => (completed.length === 2 ? true : undefined));

      expect(Object.fromEntries(perKey)).toEqual({ 'order-1': 5, 'order-2': 3 });
      const replays = upstream.received.slice(before);
      expect(replays).toHaveLength(2);
      for (const r of replays) {
        expect(r.method).toBe('POST');
        expect(r.headers.authorization).toBe('Bearer worker-secret');
        expect(r.headers['x-trace']).toBe(r.headers['idempotency-key']);
      }
      const byKey = new Map(replays.map((r) => [r.headers['idempotency-key'], r.body]));
      expect(byKey.get('order-1')?.toString()).toBe('{"amount":4200}');
      expect([...(byKey.get('order-2') ?? [])]).toEqual([...bytes]);
    } finally {
      await worker?.close();
      await queue.obliterate({ force: true });
      await queue.close();
      await upstream.close();
    }
  }, 60_000);

  it('main.mjs runs as documented and every order is charged once', async () => {
    // Run the example from a copy inside the compiled build, where `import 'staunch'` resolves.
    const build = await compiledDist();
    const dir = mkdtempSync(join(build, 'example-'));
    try {
      const source = fileURLToPath(new URL('../../examples/deferred-replay', import.meta.url));
      cpSync(source, dir, { recursive: true });
      const output = await new Promise<string>((resolve, reject) => {
        execFile(
          process.execPath,
          [join(dir, 'main.mjs')],
          { env: { ...process.env, REDIS_URL: server.url }, timeout: 60_000 },
          (error, stdout, stderr) =>
            error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout),
        );
      });
      for (const id of ['order-1', 'order-2', 'order-3']) {
        expect(output).toContain(`${id}: 503 (gave up, queued for replay)`);
        expect(output).toContain(`replayed ${id}: 200`);
        expect(output).toMatch(new RegExp(`${id}: \\d+ requests seen, charged once`));
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

async function until<T>(check: () => Promise<T | undefined>, ms = 30_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error('until: condition not met');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
