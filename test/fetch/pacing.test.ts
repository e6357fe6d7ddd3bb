/** Server pacing: honoured, capped, and never slept past the deadline. */
import { describe, expect, test } from 'vitest';
import type { GiveUpEvent, RetryEvent } from '../../src/index.js';
import { client, waits } from '../helpers/harness.js';
import { httpServer, type TestServer } from '../helpers/server.js';
import { closeAfterEach } from '../helpers/teardown.js';

let server: TestServer;
const open = closeAfterEach();

/** 429 with `headers` to the first request, then 200. */
async function pacedOnce(headers: (now: number) => Record<string, string>, now: () => number) {
  server = await httpServer((_req, res, i) => {
    if (i === 0) res.writeHead(429, headers(now()));
    res.end(i === 0 ? 'slow down' : 'ok');
  });
  open.add(server);
}

function setup(options: Parameters<typeof client>[0] = {}) {
  const events = { retry: [] as RetryEvent[], giveUp: [] as GiveUpEvent[] };
  // The rate limiter's own waits are tested in test/policy; here only the executor's delays.
  const c = client({
    random: () => 0,
    rateLimit: false,
    ...options,
    on: { retry: (e) => events.retry.push(e), giveUp: (e) => events.giveUp.push(e) },
  });
  open.defer(c.stop);
  return { ...c, events };
}

const imf = (ms: number) => new Date(ms).toUTCString();
const rfc850 = (ms: number) => {
  const d = new Date(ms);
  const day = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'][
    d.getUTCDay()
  ];
  const [, dd, mon, yyyy, time] = d.toUTCString().split(' ');
  return `${day}, ${dd}-${mon}-${yyyy!.slice(2)} ${time} GMT`;
};
const asctime = (ms: number) => {
  const [wd, dd, mon, yyyy, time] = new Date(ms).toUTCString().replace(',', '').split(' ');
  return `${wd} ${mon} ${dd!.replace(/^0/, ' ')} ${time} ${yyyy}`;
};

describe('a hint is honoured: the delay is at least what the server asked', () => {
  test.each([
    ['Retry-After seconds', () => ({ 'retry-after': '7' }), 7000, 'retry-after'],
    ['retry-after-ms', () => ({ 'retry-after-ms': '1500' }), 1500, 'retry-after-ms'],
    ['IMF-fixdate', (now: number) => ({ 'retry-after': imf(now + 9000) }), 9000, 'retry-after'],
    ['RFC 850 date', (now: number) => ({ 'retry-after': rfc850(now + 4000) }), 4000, 'retry-after'],
    [
      'asctime date',
      (now: number) => ({ 'retry-after': asctime(now + 3000) }),
      3000,
      'retry-after',
    ],
    ['RateLimit t=', () => ({ ratelimit: '"default";r=0;t=12' }), 12_000, 'ratelimit'],
    [
      'RateLimit, the spent one of several policies',
      () => ({ ratelimit: '"daily";r=900;t=86000, "burst";r=0;t=8' }),
      8_000,
      'ratelimit',
    ],
    [
      'X-RateLimit-Reset epoch seconds',
      (now: number) => ({ 'x-ratelimit-reset': String(Math.ceil((now + 5000) / 1000)) }),
      5000,
      'x-ratelimit-reset',
    ],
  ])('%s', async (_name, headers, expected, source) => {
    const { fetch, clock, events } = setup({ random: () => 0.999 });
    await pacedOnce(headers, clock.now);
    const res = await fetch(server.url, { method: 'POST', body: 'x' });
    expect(res.status).toBe(200);
    expect(server.received).toHaveLength(2);
    const [delay] = waits(clock);
    expect(delay).toBeGreaterThanOrEqual(expected);
    // A small spread on top, at most 20 % of the hint and never more than 1 s.
    expect(delay).toBeLessThanOrEqual(expected + Math.min(1000, expected * 0.2));
    expect(events.retry[0]).toMatchObject({ delaySource: source, status: 429 });
  });

  test('the spread separates clients told the same second', async () => {
    const delays: number[] = [];
    for (const r of [0, 0.5, 0.99]) {
      const { fetch, clock, stop } = setup({ random: () => r });
      await pacedOnce(() => ({ 'retry-after': '2' }), clock.now);
      await fetch(server.url);
      delays.push(waits(clock)[0]!);
      stop();
      await server.close();
    }
    expect(new Set(delays).size).toBe(3);
    for (const d of delays) expect(d).toBeGreaterThanOrEqual(2000);
  });
});

describe('a hint that cannot lead to success ends the retrying at once', () => {
  test('longer than maxRetryAfter: the 429 comes back, no sleep', async () => {
    const { fetch, clock, events } = setup({ retry: { maxRetryAfter: 30_000 } });
    await pacedOnce(() => ({ 'retry-after': '120' }), clock.now);
    const res = await fetch(server.url);
    expect(res.status).toBe(429);
    expect(await res.text()).toBe('slow down');
    expect(server.received).toHaveLength(1);
    expect(waits(clock)).toEqual([]);
    expect(events.giveUp).toEqual([
      expect.objectContaining({ reason: 'retry-after', delay: 120_000, status: 429 }),
    ]);
  });

  test('longer than the time left before the deadline: given up, no sleep', async () => {
    const { fetch, clock, events } = setup({ timeout: { total: 5000 } });
    await pacedOnce(() => ({ 'retry-after': '10' }), clock.now);
    const res = await fetch(server.url);
    expect(res.status).toBe(429);
    expect(server.received).toHaveLength(1);
    expect(waits(clock, 5000)).toEqual([]);
    expect(events.giveUp[0]).toMatchObject({ reason: 'deadline', delay: 10_000 });
  });

  test('a backoff delay past the deadline also ends it', async () => {
    server = await httpServer((_req, res) => {
      res.statusCode = 503;
      res.end();
    });
    open.add(server);
    const { fetch, events } = setup({ random: () => 0.999, timeout: { total: 1_000 }, retry: 5 });
    const res = await fetch(server.url);
    expect(res.status).toBe(503);
    // ~750 ms fits in 1 s, then ~2.25 s does not.
    expect(server.received).toHaveLength(2);
    expect(events.giveUp[0]).toMatchObject({ reason: 'deadline', attempts: 2 });
  });
});

describe('a malformed hint falls back to the backoff', () => {
  test.each(['-5', '1.5', '0x10', '120junk', '', 'Infinity'])('Retry-After: %j', async (value) => {
    const { fetch, clock, events } = setup({ random: () => 0.5 });
    await pacedOnce(() => ({ 'retry-after': value }), clock.now);
    const res = await fetch(server.url);
    expect(res.status).toBe(200);
    expect(waits(clock)).toEqual([500]);
    expect(events.retry[0]).toMatchObject({ delaySource: 'backoff' });
  });
});
