/**
 * `deadlineHeader`: each attempt carries the time left before staunch's
 * deadline, read from the injected clock at send time, so the values are exact.
 */
import { describe, expect, test } from 'vitest';
import { constantBackoff, createFetch } from '../../src/index.js';
import { formatTimeLeft, parseTimeLeft } from '../../src/internal/time-left.js';
import { client } from '../helpers/harness.js';
import { scriptServer, type TestServer } from '../helpers/server.js';
import { closeAfterEach } from '../helpers/teardown.js';

const cleanup = closeAfterEach();

/** 503 twice, then 200: three attempts. */
async function flaky(): Promise<TestServer> {
  return cleanup.add(await scriptServer({ script: [503, 503], after: { body: 'ok' } }));
}

function auto(options: Parameters<typeof client>[0]) {
  const c = client({ retry: { attempts: 3, backoff: constantBackoff(400) }, ...options });
  cleanup.defer(c.stop);
  return c;
}

const sent = (server: TestServer, name: string) =>
  server.received.map((r) => r.headers[name.toLowerCase()]);

describe('deadlineHeader on createFetch', () => {
  test('each attempt carries the total deadline left at its send time, in ms', async () => {
    const server = await flaky();
    const { fetch, clock } = auto({
      timeout: { total: 5_000 },
      deadlineHeader: 'X-Timeout-Ms',
    });
    const res = await fetch(server.url);
    expect(res.status).toBe(200);
    // Two backoffs of 400 ms passed on the clock before attempts 2 and 3.
    expect(clock.sleeps.filter((ms) => ms === 400)).toHaveLength(2);
    expect(sent(server, 'X-Timeout-Ms')).toEqual(['5000', '4600', '4200']);
  });

  test('grpc-timeout syntax, a margin taken off, the attempt timeout when it is the lesser', async () => {
    const server = await flaky();
    const { fetch } = auto({
      timeout: { attempt: 4_500, total: 5_000 },
      deadlineHeader: { name: 'grpc-timeout', format: 'grpc-timeout', margin: 100 },
    });
    await fetch(server.url);
    // min(4500, 5000) - 100; min(4500, 4600) - 100; min(4500, 4200) - 100.
    expect(sent(server, 'grpc-timeout')).toEqual(['4400m', '4400m', '4100m']);
  });

  test('no finite deadline, no header; timeout.attempt alone is a deadline', async () => {
    const server = await flaky();
    const none = auto({ timeout: false, deadlineHeader: 'X-Timeout-Ms' });
    await none.fetch(server.url);
    expect(sent(server, 'X-Timeout-Ms')).toEqual([undefined, undefined, undefined]);
    const attemptOnly = auto({
      timeout: { attempt: 2_000, total: false },
      deadlineHeader: 'X-Timeout-Ms',
    });
    await attemptOnly.fetch(server.url);
    expect(sent(server, 'X-Timeout-Ms').slice(3)).toEqual(['2000']);
  });

  test('a margin larger than the time left sends 0', async () => {
    const server = await flaky();
    const { fetch } = auto({
      timeout: { total: 500 },
      retry: 1,
      deadlineHeader: { name: 'X-Timeout-Ms', margin: 800 },
    });
    await fetch(server.url);
    expect(sent(server, 'X-Timeout-Ms')).toEqual(['0']);
  });

  test('per request: another header or timeout, or none; the caller’s own value wins', async () => {
    const server = await flaky();
    const { fetch } = auto({ timeout: { total: 5_000 }, deadlineHeader: 'X-Timeout-Ms', retry: 1 });
    await fetch(server.url, {
      staunch: { timeout: 3_000, deadlineHeader: { name: 'X-Left', format: 'grpc-timeout' } },
    });
    await fetch(server.url, { staunch: { deadlineHeader: false } });
    await fetch(server.url, { headers: { 'x-timeout-ms': '123' } });
    const [first, second, third] = server.received;
    expect(first!.headers['x-left']).toBe('3000m');
    expect(first!.headers['x-timeout-ms']).toBeUndefined();
    expect(second!.headers['x-timeout-ms']).toBeUndefined();
    expect(third!.headers['x-timeout-ms']).toBe('123');
  });

  test('off by default', async () => {
    const server = await flaky();
    const { fetch } = auto({ retry: 1 });
    await fetch(server.url);
    expect(Object.keys(server.received[0]!.headers)).not.toContain('x-timeout-ms');
    expect(Object.keys(server.received[0]!.headers)).not.toContain('grpc-timeout');
  });

  test('bad values: a TypeError or RangeError naming the option and the value', async () => {
    expect(() => createFetch({ deadlineHeader: 'bad name' })).toThrow(
      new TypeError('deadlineHeader must be a header name, got "bad name"'),
    );
    expect(() => createFetch({ deadlineHeader: { name: 'x', format: 'sec' as 'ms' } })).toThrow(
      new TypeError("deadlineHeader.format must be 'ms' or 'grpc-timeout', got \"sec\""),
    );
    expect(() => createFetch({ deadlineHeader: { name: 'x', margin: -1 } })).toThrow(RangeError);
    expect(() => createFetch({ deadlineHeader: { name: 'x', margin: -1 } })).toThrow(
      /deadlineHeader\.margin .*-1/,
    );
    expect(() => createFetch({ deadlineHeader: 5 as unknown as string })).toThrow(
      new TypeError('deadlineHeader must be an object, got 5'),
    );
    const fetch = createFetch({ fetch: async () => new Response('') });
    await expect(
      fetch('http://127.0.0.1:9/', { staunch: { deadlineHeader: { name: '' } } }),
    ).rejects.toThrow(
      new TypeError('init.staunch.deadlineHeader.name must be a header name, got ""'),
    );
  });
});

describe('the time-left syntaxes', () => {
  test('grpc-timeout keeps at most 8 digits, rounding down', () => {
    expect(formatTimeLeft(950.7, 'grpc-timeout')).toBe('950m');
    expect(formatTimeLeft(99_999_999, 'grpc-timeout')).toBe('99999999m');
    expect(formatTimeLeft(100_000_000, 'grpc-timeout')).toBe('100000S');
    expect(formatTimeLeft(2_147_483_647, 'grpc-timeout')).toBe('2147483S');
    expect(formatTimeLeft(-5, 'grpc-timeout')).toBe('0m');
    expect(formatTimeLeft(-5, 'ms')).toBe('0');
    expect(formatTimeLeft(1234.9, 'ms')).toBe('1234');
  });

  test('read back: each unit, auto, malformed values undefined', () => {
    expect(parseTimeLeft('3S', 'grpc-timeout')).toBe(3_000);
    expect(parseTimeLeft('2M', 'auto')).toBe(120_000);
    expect(parseTimeLeft('1H', 'auto')).toBe(3_600_000);
    expect(parseTimeLeft('950m', 'auto')).toBe(950);
    expect(parseTimeLeft('5000u', 'auto')).toBe(5);
    expect(parseTimeLeft('7000000n', 'auto')).toBe(7);
    expect(parseTimeLeft(' 1500 ', 'ms')).toBe(1500);
    for (const bad of ['', '-1', '1.5', '123456789m', '10s', '10S ms', 'abc', '1e3']) {
      expect(parseTimeLeft(bad, 'auto'), bad).toBeUndefined();
    }
    expect(parseTimeLeft('10S', 'ms')).toBeUndefined();
    expect(parseTimeLeft('10', 'grpc-timeout')).toBeUndefined();
    expect(parseTimeLeft(undefined, 'auto')).toBeUndefined();
  });
});
