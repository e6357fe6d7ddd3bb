/**
 * The providers' pacing headers: tables of OpenAI's and Anthropic's real
 * header shapes, and fast-check properties (round trips, and no crash, NaN
 * or negative number on any header value).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type ProviderRateLimits,
  parseGoDuration,
  parseResetValue,
  parseRfc3339,
  readProviderRateLimits,
  spentWindow,
} from '../../src/llm/headers.js';

const NOW = Date.UTC(2026, 11, 1, 10, 0, 0);

describe('parseGoDuration', () => {
  it.each([
    ['1s', 1000],
    ['6m0s', 360_000],
    ['20ms', 20],
    ['8.64s', 8640],
    ['1h2m3.5s', 3_723_500],
    ['0', 0],
    ['0s', 0],
    ['59.999s', 59_999],
    ['1.5µs', 1],
    ['1.5μs', 1],
    ['100ns', 1],
    ['2us', 1],
    ['.5s', 500],
    ['1.s', 1000],
    ['+3s', 3000],
    ['-3s', 0],
    [' 2m ', 120_000],
    ['3h0m0s', 10_800_000],
  ])('%j → %d ms', (value, ms) => {
    expect(parseGoDuration(value)).toBe(ms);
  });

  it.each(['', '1', '5x', 's', '1 s', '1s ms', '.s', '1..5s', '1e3s', 'NaN', '1,5s', '-'])(
    '%j is not a duration',
    (value) => {
      expect(parseGoDuration(value)).toBeUndefined();
    },
  );

  it('a duration Go could not hold is refused', () => {
    expect(parseGoDuration('3000000h')).toBeUndefined();
    expect(parseGoDuration(`${'9'.repeat(400)}s`)).toBeUndefined();
  });

  it('round trip: h, m, s, ms written as Go writes them', () => {
    fc.assert(
      fc.property(
        fc.nat({ max: 1000 }),
        fc.nat({ max: 59 }),
        fc.nat({ max: 59 }),
        fc.nat({ max: 999 }),
        (h, m, s, ms) => {
          const seconds =
            ms === 0 ? `${s}` : `${s}.${String(ms).padStart(3, '0').replace(/0+$/, '')}`;
          const text = h > 0 ? `${h}h${m}m${seconds}s` : m > 0 ? `${m}m${seconds}s` : `${seconds}s`;
          expect(parseGoDuration(text)).toBe(((h * 60 + m) * 60 + s) * 1000 + ms);
        },
      ),
    );
  });
});

describe('parseRfc3339', () => {
  it.each([
    ['2026-12-01T10:00:30Z', NOW + 30_000],
    ['2026-12-01T10:00:30.25Z', NOW + 30_250],
    ['2026-12-01t10:00:30z', NOW + 30_000],
    ['2026-12-01 10:00:30Z', NOW + 30_000],
    ['2026-12-01T12:00:30+02:00', NOW + 30_000],
    ['2026-12-01T09:30:30-00:30', NOW + 30_000],
    ['2026-12-01T10:00:60Z', NOW + 59_000],
  ])('%j', (value, at) => {
    expect(parseRfc3339(value)).toBe(at);
  });

  it.each([
    '2026-12-01',
    '2026-12-01T10:00:30',
    '2026-02-30T10:00:00Z',
    '2026-13-01T10:00:00Z',
    '2026-12-01T24:00:00Z',
    '2026-12-01T10:00:00+24:00',
    'Tue, 01 Dec 2026 10:00:00 GMT',
    '1764583230',
  ])('%j is not RFC 3339', (value) => {
    expect(parseRfc3339(value)).toBeUndefined();
  });

  it('round trip through toISOString', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 4e12 }), (t) => {
        expect(parseRfc3339(new Date(t).toISOString())).toBe(t);
      }),
    );
  });
});

describe('parseResetValue', () => {
  it('reads every family’s reset as ms from now, rounded up, never negative', () => {
    expect(parseResetValue('2026-12-01T10:00:01.5Z', NOW)).toBe(1500);
    expect(parseResetValue('2026-12-01T09:00:00Z', NOW)).toBe(0);
    expect(parseResetValue('6m0s', NOW)).toBe(360_000);
    expect(parseResetValue('30', NOW)).toBe(30_000);
    expect(parseResetValue('1.25', NOW)).toBe(1250);
    expect(parseResetValue(String(NOW / 1000 + 5), NOW)).toBe(5000);
    expect(parseResetValue(String(NOW + 7), NOW)).toBe(7);
    expect(parseResetValue('soon', NOW)).toBeUndefined();
    expect(parseResetValue(undefined, NOW)).toBeUndefined();
  });
});

describe('readProviderRateLimits', () => {
  it('OpenAI', () => {
    const headers = new Headers({
      'x-ratelimit-limit-requests': '10000',
      'x-ratelimit-remaining-requests': '0',
      'x-ratelimit-reset-requests': '6m0s',
      'x-ratelimit-limit-tokens': '2000000',
      'x-ratelimit-remaining-tokens': '1999850',
      'x-ratelimit-reset-tokens': '4ms',
      'retry-after-ms': '20.5',
    });
    const limits = readProviderRateLimits(headers, NOW);
    expect(limits).toEqual({
      requests: { limit: 10_000, remaining: 0, reset: 360_000 },
      tokens: { limit: 2_000_000, remaining: 1_999_850, reset: 4 },
      retryAfter: 21,
    });
    expect(spentWindow(limits)).toEqual({ dimension: 'requests', reset: 360_000 });
  });

  it('Anthropic, from a plain record in any case', () => {
    const limits = readProviderRateLimits(
      {
        'Anthropic-RateLimit-Requests-Limit': '50',
        'anthropic-ratelimit-requests-remaining': '49',
        'anthropic-ratelimit-requests-reset': '2026-12-01T10:00:01Z',
        'anthropic-ratelimit-tokens-remaining': '0',
        'anthropic-ratelimit-tokens-reset': '2026-12-01T10:00:12Z',
        'anthropic-ratelimit-input-tokens-limit': '40000',
        'anthropic-ratelimit-input-tokens-remaining': '0',
        'anthropic-ratelimit-input-tokens-reset': '2026-12-01T10:00:30Z',
        'anthropic-ratelimit-output-tokens-limit': '8000',
        'anthropic-ratelimit-output-tokens-remaining': '8000',
        'anthropic-ratelimit-output-tokens-reset': '2026-12-01T10:00:00Z',
        'retry-after': '30',
      },
      NOW,
    );
    expect(limits).toEqual({
      requests: { limit: 50, remaining: 49, reset: 1000 },
      tokens: { remaining: 0, reset: 12_000 },
      inputTokens: { limit: 40_000, remaining: 0, reset: 30_000 },
      outputTokens: { limit: 8000, remaining: 8000, reset: 0 },
      retryAfter: 30_000,
    });
    expect(spentWindow(limits)).toEqual({ dimension: 'inputTokens', reset: 30_000 });
  });

  it('ignores malformed values field by field; Anthropic wins over OpenAI', () => {
    const limits = readProviderRateLimits(
      new Headers({
        'x-ratelimit-limit-requests': '-1',
        'x-ratelimit-remaining-requests': '5',
        'x-ratelimit-reset-requests': 'soon',
        'anthropic-ratelimit-requests-remaining': '3',
        'x-ratelimit-remaining-tokens': '1e3',
        'retry-after-ms': 'NaN',
        'retry-after': 'later',
      }),
      NOW,
    );
    expect(limits).toEqual({ requests: { remaining: 3 } });
    expect(readProviderRateLimits(new Headers(), NOW)).toEqual({});
    expect(spentWindow({ requests: { remaining: 0 } })).toBeUndefined();
  });

  it('no crash, no NaN, no negative number on any header value', () => {
    const names = [
      'x-ratelimit-limit-requests',
      'x-ratelimit-remaining-requests',
      'x-ratelimit-reset-requests',
      'x-ratelimit-reset-tokens',
      'anthropic-ratelimit-tokens-remaining',
      'anthropic-ratelimit-requests-reset',
      'anthropic-ratelimit-output-tokens-reset',
      'retry-after-ms',
      'retry-after',
    ];
    const value = fc.oneof(
      fc.string({ unit: 'binary' }),
      fc.stringMatching(/^[-+ .0-9a-zµμ:TZ]{0,24}$/),
      fc.double().map(String),
      fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
    );
    fc.assert(
      fc.property(
        fc.dictionary(fc.constantFrom(...names), value),
        fc.oneof(fc.integer(), fc.constant(Number.NaN)),
        (record, now) => {
          const limits: ProviderRateLimits = readProviderRateLimits(record, now);
          const numbers: unknown[] = [limits.retryAfter];
          for (const w of [
            limits.requests,
            limits.tokens,
            limits.inputTokens,
            limits.outputTokens,
          ]) {
            if (w !== undefined) numbers.push(w.limit, w.remaining, w.reset);
          }
          for (const n of numbers) {
            if (n === undefined) continue;
            expect(typeof n).toBe('number');
            expect(Number.isFinite(n as number)).toBe(true);
            expect(n as number).toBeGreaterThanOrEqual(0);
          }
        },
      ),
      { numRuns: 2000 },
    );
  });
});
