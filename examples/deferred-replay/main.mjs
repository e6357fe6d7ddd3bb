#!/usr/bin/env node
/**
 * Deferred replay, end to end on your machine:
 *
 *   npm run build && REDIS_URL=redis://127.0.0.1:6379 node examples/deferred-replay/main.mjs
 *
 * A demo "payments" server is down until the replay worker starts. Three orders
 * are posted with idempotency keys; staunch retries, then gives up; the
 * giveUp listener queues each one in BullMQ. A worker replays them once the
 * server is back (BullMQ would retry a failed replay with backoff), with the same key
 * and its own credentials. The server prints what it saw per key: each order
 * was charged once.
 */
import { createServer } from 'node:http';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { createFetch } from 'staunch';
import { deferGiveUps, replayWorker } from './replay-queue.mjs';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const QUEUE = `staunch-replay-demo-${process.pid}`;

// The upstream: 503 until the replay worker starts (the outage outlasts the client's own
// retries), then charges each idempotency key once.
let up = false;
const seen = new Map();
const charged = new Set();
const payments = createServer((req, res) => {
  const key = req.headers['idempotency-key'] ?? '(none)';
  seen.set(key, (seen.get(key) ?? 0) + 1);
  req.resume();
  req.on('end', () => {
    if (!up) {
      res.statusCode = 503;
      return res.end();
    }
    charged.add(key);
    res.end(JSON.stringify({ charged: key }));
  });
});
await new Promise((resolve) => payments.listen(0, '127.0.0.1', resolve));
const base = `http://127.0.0.1:${payments.address().port}`;

// BullMQ wants maxRetriesPerRequest: null on its connections.
const connection = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
const queue = new Queue(QUEUE, { connection });

const fetch = createFetch({
  retry: { attempts: 2 },
  on: { giveUp: deferGiveUps(queue) },
});

const orders = ['order-1', 'order-2', 'order-3'];
for (const id of orders) {
  const res = await fetch(`${base}/charges`, {
    method: 'POST',
    headers: { authorization: 'Bearer client-token', 'content-type': 'application/json' },
    body: JSON.stringify({ order: id, amount: 4200 }),
    idempotencyKey: id,
  });
  console.log(`${id}: ${res.status} (gave up, queued for replay)`);
}

up = true;
const worker = replayWorker({
  connection,
  queueName: QUEUE,
  fetch: createFetch({ retry: false }),
  credentials: () => [['authorization', 'Bearer worker-token']],
});
let done = 0;
await new Promise((resolve) => {
  worker.on('completed', (job) => {
    console.log(`replayed ${job.data.idempotencyKey}: ${job.returnvalue.status}`);
    if (++done === orders.length) resolve();
  });
  worker.on('failed', (job, error) =>
    console.log(`replay of ${job?.id} will be retried: ${error.message}`),
  );
});

for (const id of orders) {
  console.log(
    `${id}: ${seen.get(id)} requests seen, charged ${charged.has(id) ? 'once' : 'never'}`,
  );
}
await worker.close();
await queue.obliterate({ force: true });
await queue.close();
connection.disconnect();
payments.close();
