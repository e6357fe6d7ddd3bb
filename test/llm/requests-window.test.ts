/**
 * What the limiter does with OpenAI's requests headers: a fake provider on
 * 127.0.0.1 with a continuous 60-per-minute bucket (as OpenAI's: the reset
 * is the time until the bucket is full again), on the fake clock. A
 * remaining count of 0 pauses the key until the stated reset, so a caller
 * in a loop gets the stated rate over each window without a single 429, in
 * bursts (docs/llm.md, "The requests window").
 */
import { expect, test } from 'vitest';
import { llm } from '../../src/llm/index.js';
import { httpServer } from '../helpers/server.js';
import { closeAfterEach } from '../helpers/teardown.js';
import { harness, json, named } from './provider.js';

const open = closeAfterEach();

const LIMIT = 60;
const WINDOW = 60_000;

test('a loop under a 60-per-minute bucket: the stated rate, no 429', async () => {
  const h = harness((clock) => llm({ clock }));
  open.defer(h.stop);
  let tokens = LIMIT;
  let at = h.clock.now();
  const sentAt: number[] = [];
  let refused = 0;
  const server = open.add(
    await httpServer((_req, res) => {
      const now = h.clock.now();
      tokens = Math.min(LIMIT, tokens + ((now - at) * LIMIT) / WINDOW);
      at = now;
      if (tokens < 1) {
        refused++;
        const wait = Math.ceil(((1 - tokens) * WINDOW) / LIMIT);
        json(429, { error: { type: 'requests' } }, { 'retry-after-ms': String(wait) })(res);
        return;
      }
      tokens--;
      sentAt.push(now);
      json(
        200,
        {},
        {
          'x-ratelimit-limit-requests': String(LIMIT),
          'x-ratelimit-remaining-requests': String(Math.floor(tokens)),
          'x-ratelimit-reset-requests': `${Math.ceil(((LIMIT - tokens) * WINDOW) / LIMIT)}ms`,
        },
      )(res);
    }),
  );
  const start = h.clock.now();
  for (let i = 0; i < 150; i++) {
    const res = await h.fetch(server.url, { method: 'POST', body: '{"model":"m"}' });
    expect(res.status).toBe(200);
  }
  expect(refused).toBe(0);
  // 60 at once (the bucket starts full), then remaining 0 with a reset of 60 s (the time
  // until the bucket is full again) pauses the key for those 60 s; the next 60 leave
  // paced by the engaged limiter, a pause until full again, then the last 30.
  const waits = named<{ reason: string; duration: number }>(h, 'wait');
  expect(waits.every((w) => w.reason === 'rate-limit')).toBe(true);
  const long = waits.filter((w) => w.duration >= 1000).map((w) => w.duration);
  expect(long).toHaveLength(2);
  expect(long[0]).toBe(WINDOW);
  expect(sentAt.filter((t) => t === start)).toHaveLength(LIMIT);
  expect(sentAt[LIMIT]! - start).toBe(WINDOW);
  expect(sentAt[2 * LIMIT]! - start).toBeGreaterThanOrEqual(2 * WINDOW - 1000);
  // Never more than the bucket allows: at most LIMIT + elapsed × rate by any time.
  for (const [i, t] of sentAt.entries()) {
    expect(i + 1).toBeLessThanOrEqual(LIMIT + Math.floor(((t - start) * LIMIT) / WINDOW));
  }
  // 120 s for 150 requests; at the stated rate from a full bucket, the last would leave at 90 s.
  expect(sentAt.at(-1)! - start).toBeLessThan(2 * WINDOW + 1000);
});
