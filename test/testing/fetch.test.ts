/**
 * staunch/testing's fetch: each fault as staunch sees it, driven through
 * createFetch on a test clock, and the counts the fault fetch keeps.
 */
import { describe, expect, test } from 'vitest';
import {
  createFetch,
  DeadlineExceededError,
  NetworkError,
  type StaunchOptions,
} from '../../src/index.js';
import { type FaultFetchOptions, faultFetch, testClock } from '../../src/testing/index.js';
import { faultServer } from '../../src/testing/server.js';
import { until } from '../helpers/clock.js';
import { closeAfterEach } from '../helpers/teardown.js';

const open = closeAfterEach();
const URL_ = 'http://api.test/v1/things';

/** A staunch fetch over a fault fetch, on a test clock that runs every wait at once. */
function setup(script: FaultFetchOptions, options: Omit<StaunchOptions, 'fetch' | 'clock'> = {}) {
  const clock = testClock();
  const faulty = faultFetch({ ...script, clock });
  open.defer(clock.autoAdvance());
  const fetch = createFetch({ random: () => 0.5, ...options, fetch: faulty, clock });
  return { clock, faulty, fetch };
}

describe('scripted faults through createFetch', () => {
  test('a 503 then pass: one retry, two GETs seen, the last answered 200', async () => {
    const { faulty, fetch } = setup({ script: [503] });
    const res = await fetch(URL_);
    expect(res.status).toBe(200);
    expect(faulty.seen.attempts).toBe(2);
    expect(faulty.seen.methods).toEqual(['GET', 'GET']);
    expect(faulty.seen.urls).toEqual([URL_, URL_]);
    expect([faulty.seen.count(503), faulty.seen.count('pass')]).toEqual([1, 1]);
  });

  test('429 with Retry-After: 2 paces the retry by at least the 2 s asked', async () => {
    const { clock, faulty, fetch } = setup({ script: [{ status: 429, retryAfter: 2 }] });
    const start = clock.now();
    expect((await fetch(URL_)).status).toBe(200);
    expect(faulty.seen.attempts).toBe(2);
    const second = faulty.seen.requests[1]!;
    expect(second.fault).toBe('pass');
    expect(clock.now() - start).toBeGreaterThanOrEqual(2000);
    expect(clock.sleeps.some((ms) => ms >= 2000 && ms < 3000)).toBe(true);
  });

  test('refuse (nothing sent) is retried even for a POST without a key; reset (sent) is not', async () => {
    const refused = setup({ script: ['refuse'] });
    const ok = await refused.fetch(URL_, { method: 'POST', body: 'charge' });
    expect(ok.status).toBe(200);
    // The refused attempt sent nothing, so nothing of its body was read.
    expect(refused.faulty.seen.bodies).toEqual(['', 'charge']);
    expect(refused.faulty.seen.requests.map((r) => r.fault)).toEqual(['refuse', 'pass']);

    const reset = setup({ script: ['reset'] });
    const error = await reset.fetch(URL_, { method: 'POST', body: 'charge' }).catch((e) => e);
    expect(error).toBeInstanceOf(NetworkError);
    expect((error as NetworkError).cause).toBeInstanceOf(TypeError);
    expect(((error as NetworkError).cause as TypeError).cause).toMatchObject({
      code: 'ECONNRESET',
    });
    expect(reset.faulty.seen.attempts).toBe(1);
  });

  test('every attempt of a keyed POST carries the same key and the same body', async () => {
    const { faulty, fetch } = setup({ script: [502, 'reset'] });
    const res = await fetch(URL_, { method: 'POST', body: '{"amount":42}', idempotencyKey: 'k-1' });
    expect(res.status).toBe(200);
    expect(faulty.seen.idempotencyKeys).toEqual(['k-1', 'k-1', 'k-1']);
    expect(faulty.seen.bodies).toEqual(Array(3).fill('{"amount":42}'));
  });

  test('stall: the attempt deadline ends it, at exactly timeout.attempt on the clock', async () => {
    const { clock, faulty, fetch } = setup(
      { script: ['stall'] },
      { retry: false, timeout: { attempt: 1500 } },
    );
    const start = clock.now();
    const error = await fetch(URL_).catch((e) => e);
    expect(error).toBeInstanceOf(DeadlineExceededError);
    expect(clock.now() - start).toBe(1500);
    expect(faulty.inFlight).toBe(0);
  });

  test('a script that runs out falls back to after', async () => {
    const { faulty, fetch } = setup({ script: [500], after: 503 }, { retry: { attempts: 4 } });
    expect((await fetch(URL_)).status).toBe(503);
    expect(faulty.seen.requests.map((r) => r.fault)).toEqual([500, 503, 503, 503]);
  });
});

describe('delivery of a response step', () => {
  test('delay: the head arrives only once the clock passed it', async () => {
    const clock = testClock();
    const faulty = faultFetch({ script: [{ status: 201, delay: 500 }], clock });
    let status = 0;
    const pending = faulty(URL_).then((r) => {
      status = r.status;
    });
    await until(() => clock.remaining().length === 1);
    await clock.advance(499);
    expect(status).toBe(0);
    expect(faulty.inFlight).toBe(1);
    await clock.advance(1);
    await pending;
    expect(status).toBe(201);
    expect(clock.sleeps).toEqual([500]);
  });

  test('drip: chunks of `chunk` bytes, one every `drip` ms', async () => {
    const clock = testClock();
    open.defer(clock.autoAdvance());
    const faulty = faultFetch({ script: [{ body: 'abcdef', drip: 100, chunk: 2 }], clock });
    const reader = (await faulty(URL_)).body!.getReader();
    const chunks: string[] = [];
    for (let r = await reader.read(); !r.done; r = await reader.read()) {
      chunks.push(new TextDecoder().decode(r.value));
    }
    expect(chunks).toEqual(['ab', 'cd', 'ef']);
    expect(clock.sleeps).toEqual([100, 100]);
  });

  test('truncate: Content-Length says the whole body, the stream errors after `truncate` bytes', async () => {
    const faulty = faultFetch({ script: [{ body: 'abcdefgh', truncate: 3 }] });
    const res = await faulty(URL_);
    expect(res.headers.get('content-length')).toBe('8');
    const reader = res.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('abc');
    await expect(reader.read()).rejects.toThrow('terminated');
  });

  test('headers and a 204 without a body', async () => {
    const faulty = faultFetch({
      script: [{ status: 204, headers: { 'X-Trace': 't-1' } }],
    });
    const res = await faulty(URL_);
    expect([res.status, res.headers.get('x-trace'), res.body]).toEqual([204, 't-1', null]);
  });
});

describe('seeded chance', () => {
  const chance = {
    seed: 7,
    faults: [
      { step: 503, probability: 0.3 },
      { step: 'reset' as const, probability: 0.1 },
    ],
  };

  async function run(n: number) {
    const faulty = faultFetch({ chance });
    for (let i = 0; i < n; i++) await faulty(URL_).catch(() => undefined);
    return faulty.seen;
  }

  test('the same seed gives the same faults, in proportion to their probabilities', async () => {
    const a = await run(2000);
    const b = await run(2000);
    expect(a.requests.map((r) => r.fault)).toEqual(b.requests.map((r) => r.fault));
    expect(a.count(503) / 2000).toBeCloseTo(0.3, 1);
    expect(a.count('reset') / 2000).toBeCloseTo(0.1, 1);
    expect(a.count('pass') / 2000).toBeCloseTo(0.6, 1);
  });

  test('another seed, another sequence', async () => {
    const a = await run(50);
    const other = faultFetch({ chance: { ...chance, seed: 8 } });
    for (let i = 0; i < 50; i++) await other(URL_).catch(() => undefined);
    expect(other.seen.requests.map((r) => r.fault)).not.toEqual(a.requests.map((r) => r.fault));
  });

  test('a script runs before the chance', async () => {
    const faulty = faultFetch({ script: ['stall'], chance: { seed: 1, faults: [] } });
    const stalled = new AbortController();
    const first = faulty(URL_, { signal: stalled.signal });
    expect((await faulty(URL_)).status).toBe(200);
    stalled.abort(new Error('gave up'));
    await expect(first).rejects.toThrow('gave up');
    expect(faulty.seen.requests.map((r) => r.fault)).toEqual(['stall', 'pass']);
  });
});

describe('pass with a transport', () => {
  test('hands the transport the call as made: the same input and init, a stream body unread', async () => {
    const got: [unknown, RequestInit | undefined][] = [];
    const faulty = faultFetch({
      fetch: async (input, init) => {
        got.push([input, init]);
        return new Response(init?.body ?? null);
      },
    });
    const init = { method: 'POST', body: 'plain', headers: { 'x-a': '1' } };
    await faulty(URL_, init);
    expect(got[0]).toEqual([URL_, init]);
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode('streamed'));
        c.close();
      },
    });
    const res = await faulty(URL_, { method: 'POST', body: stream, duplex: 'half' } as RequestInit);
    expect(await res.text()).toBe('streamed');
    expect(faulty.seen.bodies).toEqual(['plain', 'streamed']);
  });

  test('forwards the recorded body to the wrapped fetch (a real server counts it)', async () => {
    const server = open.add(await faultServer());
    const faulty = faultFetch({ script: ['pass'], fetch: globalThis.fetch });
    const res = await faulty(`${server.url}/x`, { method: 'PUT', body: 'payload' });
    expect(res.status).toBe(200);
    expect(faulty.seen.bodies).toEqual(['payload']);
    expect(server.seen.bodies).toEqual(['payload']);
    expect(server.seen.methods).toEqual(['PUT']);
  });
});

describe('bad input', () => {
  test.each([
    [
      { script: [200, 'boom'] },
      TypeError,
      /script\[1\] must be a status, one of 'pass'.*got "boom"/,
    ],
    [
      { script: [99] },
      RangeError,
      /script\[0\]\.status must be an integer >= 200 and <= 599, got 99/,
    ],
    [{ script: [{ body: 'ab', truncate: 2 }] }, RangeError, /script\[0\]\.truncate .* got 2/],
    [{ script: [{ delay: -1 }] }, RangeError, /script\[0\]\.delay must be a number >= 0, got -1/],
    [{ script: [{ stauts: 500 }] }, TypeError, /script\[0\]\.stauts is not an option/],
    [{ script: 503 }, TypeError, /script must be an array of steps, got 503/],
    [
      { script: [{ headers: { 'x-a': 'one\r\nx-b: two' } }] },
      TypeError,
      /script\[0\]\.headers\.x-a must be a string without CR, LF or NUL, got "one\\r\\nx-b: two"/,
    ],
    [{ script: [{ headers: { 'bad name': 'v' } }] }, TypeError, /"bad name" is not a header name/],
    [{ after: 'explode' }, TypeError, /after must be .* got "explode"/],
    [
      { chance: { seed: 1, faults: [{ step: 503, probability: 1.5 }] } },
      RangeError,
      /chance\.faults\[0\]\.probability must be in \[0, 1\], got 1\.5/,
    ],
    [
      { chance: { seed: 1, faults: [{ step: 503, probability: -0.1 }] } },
      RangeError,
      /probability must be in \[0, 1\], got -0\.1/,
    ],
    [
      {
        chance: {
          seed: 1,
          faults: [
            { step: 503, probability: 0.6 },
            { step: 'reset', probability: 0.6 },
          ],
        },
      },
      RangeError,
      /add up to at most 1, got 1\.2/,
    ],
    [{ chance: { seed: 1.5, faults: [] } }, RangeError, /seed must be an integer, got 1\.5/],
    [{ fetch: 'http://x' }, TypeError, /options\.fetch must be a function, got "http:\/\/x"/],
    [{ retries: 3 }, TypeError, /retries is not an option/],
  ])('%o → %s', (options, type, message) => {
    expect(() => faultFetch(options as FaultFetchOptions)).toThrow(type);
    expect(() => faultFetch(options as FaultFetchOptions)).toThrow(message);
  });
});

test('a fault error carries no secret of the request', async () => {
  const SECRET = 'sk-live-SENTINEL-4242';
  for (const fault of ['refuse', 'reset'] as const) {
    const faulty = faultFetch({ script: [fault] });
    const error = await faulty(`${URL_}?api_key=${SECRET}`, {
      headers: { Authorization: `Bearer ${SECRET}` },
    }).catch((e: unknown) => e);
    const chain = [error, (error as Error).cause];
    const text = chain.map((e) => `${String(e)} ${JSON.stringify(e)} ${(e as Error).stack}`);
    expect(text.join('\n')).not.toContain(SECRET);
  }
});
