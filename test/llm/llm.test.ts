/**
 * `llm()` itself: its options (validated, named in errors), the plain
 * object it returns, what a POST retries with and without
 * `retryMaybeSent`, the error-body kinds and the key per model.
 */
import { describe, expect, test } from 'vitest';
import { createFetch, NetworkError } from '../../src/index.js';
import { LLM_STATUSES, llm, modelKey, QUOTA_CODES, readErrorKind } from '../../src/llm/index.js';
import { ERROR_PREFIX_BYTES } from '../../src/llm/transport.js';
import { fakeClock } from '../helpers/clock.js';
import { httpServer, scriptServer } from '../helpers/server.js';
import { closeAfterEach } from '../helpers/teardown.js';
import { harness, json, named } from './provider.js';

const open = closeAfterEach();

describe('options', () => {
  test.each([
    [
      { attemps: 3 },
      TypeError,
      'llm.attemps is not an option (expected one of: fetch, attempts, timeout, idleTimeout, retryMaybeSent, perModel, estimateTokens, refill, clock)',
    ],
    [{ attempts: 0 }, RangeError, 'llm.attempts'],
    [
      { refill: 'fixed' },
      TypeError,
      "llm.refill must be 'continuous' or 'at-reset', got \"fixed\"",
    ],
    [{ attempts: '3' }, TypeError, 'llm.attempts'],
    [{ timeout: 5 }, TypeError, 'llm.timeout must be an object, got 5'],
    [{ timeout: { attempt: -1 } }, RangeError, 'llm.timeout.attempt'],
    [{ timeout: { idle: 1 } }, TypeError, 'llm.timeout.idle is not an option'],
    [{ idleTimeout: 0 }, RangeError, 'llm.idleTimeout'],
    [{ idleTimeout: 'long' }, TypeError, 'llm.idleTimeout'],
    [{ retryMaybeSent: 'yes' }, TypeError, 'llm.retryMaybeSent must be a boolean, got "yes"'],
    [{ perModel: 1 }, TypeError, 'llm.perModel must be a boolean, got 1'],
    [{ fetch: 'x' }, TypeError, 'llm.fetch must be a function, got "x"'],
    [{ clock: {} }, TypeError, 'llm.clock must have now() and sleep(ms, signal), got an object'],
  ])('%j is refused', (options, type, message) => {
    expect(() => llm(options as never)).toThrow(type);
    expect(() => llm(options as never)).toThrow(message);
  });

  test('not an object', () => {
    expect(() => llm(null as never)).toThrow(new TypeError('llm must be an object, got null'));
  });

  test('a plain object of createFetch options, spread and overridden at will', () => {
    const options = llm();
    expect(options).toMatchObject({
      retry: { attempts: 3, statuses: [...LLM_STATUSES] },
      timeout: { attempt: 600_000, total: 1_800_000 },
      retryCountHeader: 'x-stainless-retry-count',
    });
    expect(options.retry).not.toMatchObject({ methods: expect.arrayContaining(['POST']) });
    expect(llm({ retryMaybeSent: true }).retry).toMatchObject({
      methods: expect.arrayContaining(['POST']),
    });
    expect(llm({ timeout: { attempt: 5_000 } }).timeout).toEqual({
      attempt: 5_000,
      total: 1_800_000,
    });
    expect(llm({ perModel: false }).key).toBeUndefined();
    expect(() => createFetch({ ...llm(), on: { retry: () => {} }, retry: 5 })).not.toThrow();
  });
});

describe('what a POST retries', () => {
  test.each([408, 409, 500, 502, 503, 504, 529])('%i', async (status) => {
    const server = open.add(
      await httpServer((_req, res, i) => json(i === 0 ? status : 200, {})(res)),
    );
    const h = harness((clock) => llm({ clock }));
    open.defer(h.stop);
    const res = await h.fetch(server.url, { method: 'POST', body: '{"model":"m"}' });
    expect(res.status).toBe(200);
    expect(server.received).toHaveLength(2);
  });

  test('not a 400, 401, 403 or 404', async () => {
    for (const status of [400, 401, 403, 404]) {
      const server = open.add(await httpServer((_req, res) => json(status, {})(res)));
      const h = harness((clock) => llm({ clock }));
      open.defer(h.stop);
      expect((await h.fetch(server.url, { method: 'POST', body: '{}' })).status).toBe(status);
      expect(server.received).toHaveLength(1);
    }
  });

  test('a reset after sending: not retried, unless retryMaybeSent', async () => {
    for (const [retryMaybeSent, expected] of [
      [false, 1],
      [true, 2],
    ] as const) {
      const server = open.add(
        await scriptServer({ script: ['reset'], handler: (_req, res) => json(200, {})(res) }),
      );
      const h = harness((clock) => llm({ clock, retryMaybeSent }));
      open.defer(h.stop);
      const outcome = await h
        .fetch(server.url, { method: 'POST', body: '{}' })
        .catch((e: unknown) => e);
      expect(server.received).toHaveLength(expected);
      if (retryMaybeSent) expect((outcome as Response).status).toBe(200);
      else {
        expect(outcome).toBeInstanceOf(NetworkError);
        expect(named(h, 'giveUp')).toMatchObject([{ reason: 'not-replayable' }]);
      }
    }
  });

  test('x-should-retry: true wins over a spent quota', async () => {
    const server = open.add(
      await httpServer((_req, res, i) =>
        i === 0
          ? json(429, { error: { code: 'insufficient_quota' } }, { 'x-should-retry': 'true' })(res)
          : json(200, {})(res),
      ),
    );
    const h = harness((clock) => llm({ clock }));
    open.defer(h.stop);
    expect((await h.fetch(server.url, { method: 'POST', body: '{}' })).status).toBe(200);
    expect(named(h, 'retry')).toMatchObject([{ kind: 'insufficient_quota' }]);
  });

  test("a 429's body stays whole for the caller, however long", async () => {
    const long = JSON.stringify({
      error: { code: 'insufficient_quota', message: 'x'.repeat(3 * ERROR_PREFIX_BYTES) },
    });
    const server = open.add(await httpServer((_req, res) => json(429, JSON.parse(long))(res)));
    const fetch = createFetch(llm({ clock: fakeClock() }));
    const res = await fetch(server.url, { method: 'POST', body: '{}' });
    expect(await res.text()).toBe(long);
    expect(server.received).toHaveLength(1);
  });
});

describe('error bodies', () => {
  test.each([
    [
      '{"error":{"type":"insufficient_quota","code":"insufficient_quota"}}',
      { quota: 'insufficient_quota' },
    ],
    ['{"type":"error","error":{"type":"billing_error","message":"x"}}', { quota: 'billing_error' }],
    [
      '{"type":"error","error":{"type":"rate_limit_error","message":"spend","details":{"error_code":"enforced_spend_limit_reached"}}}',
      { quota: 'enforced_spend_limit_reached' },
    ],
    ['{"error":{"type":"rate_limit_error","details":null}}', {}],
    ['{"error":{"type":"tokens","code":"rate_limit_exceeded"}}', { limit: 'tokens' }],
    ['{"error":{"type":"requests","code":"rate_limit_exceeded"}}', { limit: 'requests' }],
    [
      '{"error":{"type":"rate_limit_error","message":"… 8,000 output tokens per minute …"}}',
      { limit: 'output-tokens' },
    ],
    [
      '{"error":{"type":"rate_limit_error","message":"… 50 requests per minute …"}}',
      { limit: 'requests' },
    ],
    ['{"error":{"message":"Rate limit reached on tokens per min (TPM)"}}', { limit: 'tokens' }],
    ['{"error":{"type":"rate_limit_error"}}', {}],
    ['{"error":"flat"}', {}],
    ['not json', {}],
    ['{"error":{"code":"insufficient_quo', {}],
  ])('%s', (text, expected) => {
    expect(readErrorKind(text)).toEqual(expected);
  });

  test('the quota codes', () => {
    expect([...QUOTA_CODES].sort()).toEqual(
      [
        'billing_error',
        'billing_hard_limit_reached',
        'billing_not_active',
        'enforced_spend_limit_reached',
        'insufficient_quota',
      ].sort(),
    );
  });
});

describe('modelKey', () => {
  test.each([
    ['{"model":"gpt-4o","messages":[]}', 'https://api.openai.com|gpt-4o'],
    [' {"messages":[],"model":"claude"}', 'https://api.openai.com|claude'],
    ['{"messages":[]}', 'https://api.openai.com'],
    ['{"model":5}', 'https://api.openai.com'],
    [`{"model":"${'m'.repeat(201)}"}`, 'https://api.openai.com'],
    ['model=gpt', 'https://api.openai.com'],
    [undefined, 'https://api.openai.com'],
  ])('%s', (body, key) => {
    expect(
      modelKey({ method: 'POST', url: 'https://api.openai.com/v1/chat/completions', body }),
    ).toBe(key);
  });
});

test('staunch/llm exports (each documented in docs/llm.md)', async () => {
  const entry = await import('../../src/llm/index.js');
  const names = Object.keys(entry).sort();
  expect(names).toEqual(
    [
      'LLM_STATUSES',
      'QUOTA_CODES',
      'RETRY_COUNT_HEADER',
      'estimateTokens',
      'llm',
      'modelKey',
      'parseGoDuration',
      'parseResetValue',
      'parseRfc3339',
      'readErrorKind',
      'readProviderRateLimits',
      'spentWindow',
    ].sort(),
  );
  const { readFileSync } = await import('node:fs');
  const page = readFileSync(new URL('../../docs/llm.md', import.meta.url), 'utf8');
  for (const name of names) expect(page, name).toContain(`\`${name}`);
});
