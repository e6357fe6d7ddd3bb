/**
 * What the limiter learns from the providers' requests headers: a fake
 * provider on 127.0.0.1 with a continuous per-minute bucket (as OpenAI's and
 * Anthropic's: the reset is the time until the bucket is full again), on the
 * fake clock. The headers state the refill rate ((limit − remaining) /
 * reset); a remaining count of 0 engages the key at that rate, so a caller in
 * a loop keeps the quota full without a single 429 (docs/llm.md, "The
 * requests window").
 */
import type { ServerResponse } from 'node:http';
import { expect, test } from 'vitest';
import { llm } from '../../src/llm/index.js';
import { httpServer } from '../helpers/server.js';
import { closeAfterEach } from '../helpers/teardown.js';
import { type Harness, harness, json, named } from './provider.js';

const open = closeAfterEach();

const WINDOW = 60_000;

type Headers = (limit: number, remaining: number, fullInMs: number, now: number) => object;

const openai: Headers = (limit, remaining, fullIn) => ({
  'x-ratelimit-limit-requests': String(limit),
  'x-ratelimit-remaining-requests': String(remaining),
  'x-ratelimit-reset-requests': `${fullIn}ms`,
});

// Anthropic states the time it is full again as an RFC 3339 timestamp, here in whole seconds.
const anthropic: Headers = (limit, remaining, fullIn, now) => ({
  'anthropic-ratelimit-requests-limit': String(limit),
  'anthropic-ratelimit-requests-remaining': String(remaining),
  'anthropic-ratelimit-requests-reset': new Date(Math.ceil((now + fullIn) / 1000) * 1000)
    .toISOString()
    .replace('.000Z', 'Z'),
});

/** A `limit`-per-minute bucket that starts full, refills continuously, and counts what it served. */
async function bucket(h: Harness, limit: number, headers: Headers) {
  let tokens = limit;
  let at = h.clock.now();
  const sentAt: number[] = [];
  const counts = { refused: 0 };
  const server = open.add(
    await httpServer((_req, res: ServerResponse) => {
      const now = h.clock.now();
      tokens = Math.min(limit, tokens + ((now - at) * limit) / WINDOW);
      at = now;
      if (tokens < 1) {
        counts.refused++;
        const wait = Math.ceil(((1 - tokens) * WINDOW) / limit);
        json(429, { error: { type: 'requests' } }, { 'retry-after-ms': String(wait) })(res);
        return;
      }
      tokens--;
      sentAt.push(now);
      const fullIn = Math.ceil(((limit - tokens) * WINDOW) / limit);
      json(200, {}, headers(limit, Math.floor(tokens), fullIn, now) as Record<string, string>)(res);
    }),
  );
  return { url: server.url, sentAt, counts };
}

test('a loop under a 60-per-minute bucket: paced at the stated rate, no 429', async () => {
  const h = harness((clock) => llm({ clock }));
  open.defer(h.stop);
  const LIMIT = 60;
  const { url, sentAt, counts } = await bucket(h, LIMIT, openai);
  const start = h.clock.now();
  for (let i = 0; i < 150; i++) {
    const res = await h.fetch(url, { method: 'POST', body: '{"model":"m"}' });
    expect(res.status).toBe(200);
  }
  expect(counts.refused).toBe(0);
  // 60 at once (the bucket starts full). The 60th answer says remaining 0 with the time until
  // full, 60 s: 60 requests refill in 60 s, the stated rate is 1/s. The key pauses only until the
  // next request fits (1 s, not the 60 s to full) and then goes at the stated rate.
  const waits = named<{ reason: string; duration: number }>(h, 'wait');
  expect(waits.length).toBeGreaterThan(0);
  expect(waits.every((w) => w.reason === 'rate-limit')).toBe(true);
  expect(Math.max(...waits.map((w) => w.duration))).toBeLessThanOrEqual(1000);
  expect(sentAt.filter((t) => t === start)).toHaveLength(LIMIT);
  expect(sentAt[LIMIT]! - start).toBe(1000);
  // Never more than the bucket allows: at most LIMIT + elapsed × rate by any time.
  for (const [i, t] of sentAt.entries()) {
    expect(i + 1).toBeLessThanOrEqual(LIMIT + Math.floor(((t - start) * LIMIT) / WINDOW));
  }
  // The quota kept full: the last of 150 leaves at 90 s, what the stated rate allows from a
  // full bucket (it left at 120 s when the key paused until full: docs/llm.md).
  expect(sentAt.at(-1)! - start).toBe(90_000);
});

test("Anthropic's whole-second resets understate the rate: slower, never refused", async () => {
  const h = harness((clock) => llm({ clock }));
  open.defer(h.stop);
  const LIMIT = 50;
  const { url, sentAt, counts } = await bucket(h, LIMIT, anthropic);
  const start = h.clock.now();
  for (let i = 0; i < 100; i++) {
    const res = await h.fetch(url, { method: 'POST', body: '{"model":"claude"}' });
    expect(res.status).toBe(200);
  }
  expect(counts.refused).toBe(0);
  // The stated rate is 50 over the 60 s to full, rounded up to the second: at most 50/60 per s.
  // The 51st leaves as soon as one request fits (1.2 s, 2 s with the rounding), not when the
  // bucket is full again (60 s); the 50 after the burst take the 60 s the bucket needs, and not
  // much more.
  expect(sentAt[LIMIT]! - start).toBeLessThanOrEqual(2_000);
  const last = sentAt.at(-1)! - start;
  expect(last).toBeGreaterThanOrEqual(60_000);
  expect(last).toBeLessThan(66_000);
});
