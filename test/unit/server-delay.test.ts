import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type HeaderSource,
  hasQuotaHeaders,
  MAX_DELAY,
  parseHttpDate,
  parseRetryAfter,
  parseServerDelay,
  readHeader,
  readServerPacing,
} from '../../src/retry/server-delay.js';

/** 37 s before the RFC's example date, Sun, 06 Nov 1994 08:49:37 GMT. */
const BEFORE_EXAMPLE = Date.UTC(1994, 10, 6, 8, 49, 0);
const EXAMPLE = Date.UTC(1994, 10, 6, 8, 49, 37);
/** 2026-01-01T00:00:00Z */
const NOW = Date.UTC(2026, 0, 1);

describe('parseRetryAfter: delta-seconds', () => {
  it.each([
    ['0', 0],
    ['1', 1_000],
    ['120', 120_000],
    ['00120', 120_000],
    [' 120 ', 120_000], // OWS around the value
    ['\t7', 7_000],
    ['86400', 86_400_000],
  ])('%j → %i ms', (value, expected) => {
    expect(parseRetryAfter(value, NOW)).toBe(expected);
  });

  it.each([
    '-5',
    '+5',
    '1.5',
    '0x10',
    '120junk',
    '12 0',
    '',
    ' ',
    'Infinity',
    'NaN',
    '1e3',
    '٣', // Arabic-Indic digit: not DIGIT
    '１２', // full-width digits
    '2026-01-01T00:00:00Z', // ISO 8601 is not an HTTP-date
    'tomorrow',
  ])('%j → undefined', (value) => {
    expect(parseRetryAfter(value, NOW)).toBeUndefined();
  });

  it('null and undefined → undefined', () => {
    expect(parseRetryAfter(null, NOW)).toBeUndefined();
    expect(parseRetryAfter(undefined, NOW)).toBeUndefined();
  });

  it('a delta too large to represent is a very long wait, not "no hint"', () => {
    const huge = parseRetryAfter('9'.repeat(400), NOW);
    expect(huge).toBeDefined();
    expect(Number.isFinite(huge)).toBe(true);
    expect(huge).toBeGreaterThan(MAX_DELAY);
  });
});

describe('parseRetryAfter: HTTP-date (RFC 9110 §5.6.7)', () => {
  it.each([
    ['IMF-fixdate', 'Sun, 06 Nov 1994 08:49:37 GMT'],
    ['RFC 850', 'Sunday, 06-Nov-94 08:49:37 GMT'],
    ['asctime', 'Sun Nov  6 08:49:37 1994'],
  ])('%s %j → ms until that instant', (_form, value) => {
    expect(parseRetryAfter(value, BEFORE_EXAMPLE)).toBe(37_000);
    expect(parseHttpDate(value, BEFORE_EXAMPLE)).toBe(EXAMPLE);
  });

  it.each([
    'Sun, 06 Nov 1994 08:49:37 GMT',
    'Sunday, 06-Nov-94 08:49:37 GMT',
    'Sun Nov  6 08:49:37 1994',
  ])('%j in the past → 0', (value) => {
    expect(parseRetryAfter(value, NOW)).toBe(0);
    expect(parseRetryAfter(value, EXAMPLE)).toBe(0);
    expect(parseRetryAfter(value, EXAMPLE + 1)).toBe(0);
  });

  it('a future date a day ahead', () => {
    expect(parseRetryAfter('Fri, 02 Jan 2026 00:00:00 GMT', NOW)).toBe(86_400_000);
    expect(parseRetryAfter('Fri Jan  2 00:00:00 2026', NOW)).toBe(86_400_000);
    expect(parseRetryAfter('Friday, 02-Jan-26 00:00:00 GMT', NOW)).toBe(86_400_000);
  });

  it('asctime with a two-digit day', () => {
    expect(parseHttpDate('Thu Nov 16 08:49:37 1994')).toBe(Date.UTC(1994, 10, 16, 8, 49, 37));
  });

  it('second 60 (a leap second) is the start of the next minute, not :59', () => {
    expect(parseHttpDate('Wed, 31 Dec 2025 23:59:60 GMT')).toBe(Date.UTC(2026, 0, 1));
    expect(parseHttpDate('Thu, 01 Jan 2026 12:30:60 GMT')).toBe(Date.UTC(2026, 0, 1, 12, 31));
    expect(parseHttpDate('Thursday, 01-Jan-26 12:30:60 GMT', Date.UTC(2026, 0, 1))).toBe(
      Date.UTC(2026, 0, 1, 12, 31),
    );
    expect(parseHttpDate('Thu Jan  1 12:30:60 2026')).toBe(Date.UTC(2026, 0, 1, 12, 31));
  });

  it('a Retry-After date at second 60 waits the whole time asked', () => {
    const now = Date.UTC(2025, 11, 31, 23, 59);
    expect(parseRetryAfter('Wed, 31 Dec 2025 23:59:60 GMT', now)).toBe(60_000);
    expect(parseRetryAfter('Wed, 31 Dec 2025 23:59:59 GMT', now)).toBe(59_000);
  });

  it('Feb 29 in a leap year is valid', () => {
    expect(parseHttpDate('Thu, 29 Feb 2024 12:00:00 GMT')).toBe(Date.UTC(2024, 1, 29, 12));
  });

  it.each([
    'Mon, 30 Feb 2026 00:00:00 GMT', // Feb 30
    'Sun, 29 Feb 2026 00:00:00 GMT', // not a leap year
    'Thu, 31 Apr 2026 00:00:00 GMT',
    'Thu, 00 Jan 2026 00:00:00 GMT',
    'Thu, 32 Jan 2026 00:00:00 GMT',
    'Thu, 01 Jan 2026 24:00:00 GMT',
    'Thu, 01 Jan 2026 23:60:00 GMT',
    'Thu, 01 Jan 2026 23:59:61 GMT',
    'Thu, 1 Jan 2026 00:00:00 GMT', // IMF-fixdate wants two digits
    'Thu, 01 Jan 2026 00:00:00 UTC',
    'Thu, 01 Jan 2026 00:00:00',
    'thu, 01 jan 2026 00:00:00 GMT', // case-sensitive
    'Thursday, 01 Jan 2026 00:00:00 GMT',
    'Thu, 01-Jan-26 00:00:00 GMT', // RFC 850 wants the full day name
    'Thursday, 30-Feb-26 00:00:00 GMT',
    'Thu Feb 30 00:00:00 2026',
    'Thu Jan 1 00:00:00 2026', // asctime wants SP DIGIT or 2DIGIT
    'Thu, 01 Jan 2026 00:00:00 GMT junk',
    'Thu, 01 Foo 2026 00:00:00 GMT',
  ])('malformed %j → undefined', (value) => {
    expect(parseRetryAfter(value, NOW)).toBeUndefined();
    expect(parseHttpDate(value, NOW)).toBeUndefined();
  });
});

describe('RFC 850 two-digit year: more than 50 years ahead means the past century', () => {
  const at = (year: number) => Date.UTC(year, 5, 15);
  const yearOf = (yy: string, now: number) => {
    const t = parseHttpDate(`Sunday, 06-Nov-${yy} 08:49:37 GMT`, now);
    return t === undefined ? undefined : new Date(t).getUTCFullYear();
  };

  it.each([
    [2026, '94', 1994],
    [2026, '26', 2026],
    [2026, '25', 2025],
    [2026, '76', 2076],
    [2026, '77', 1977],
    [2026, '00', 2000],
    [1994, '94', 1994],
    [1994, '44', 2044],
    [1994, '45', 1945],
    [2060, '09', 2109], // 2109 is 49 years ahead: not more than 50
    [2060, '11', 2011],
    [2099, '00', 2100], // the next century, one year ahead
    [2099, '98', 2098],
    [2150, '01', 2101], // 2201 would be 51 years ahead
    [2150, '00', 2200],
  ])('in %i, %s → %i', (now, yy, expected) => {
    expect(yearOf(yy, at(now))).toBe(expected);
  });

  it('agrees with the rule for every two-digit year and every current year', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1971, max: 9900 }),
        fc.integer({ min: 0, max: 99 }),
        (y, yy) => {
          const year = yearOf(String(yy).padStart(2, '0'), at(y));
          return year !== undefined && year % 100 === yy && year <= y + 50 && year > y - 50;
        },
      ),
    );
  });
});

describe('readHeader', () => {
  it('reads a Headers object case-insensitively', () => {
    const headers = new Headers({ 'Retry-After': '5' });
    expect(readHeader(headers, 'retry-after')).toBe('5');
    expect(readHeader(headers, 'Retry-After')).toBe('5');
    expect(readHeader(headers, 'x-missing')).toBeUndefined();
  });

  it('reads a record with any key case, by any name case', () => {
    expect(readHeader({ 'Retry-After': '5' }, 'retry-after')).toBe('5');
    expect(readHeader({ 'RETRY-AFTER': '5' }, 'retry-after')).toBe('5');
    expect(readHeader({ 'retry-after': '5' }, 'Retry-After')).toBe('5');
    expect(readHeader({ 'retry-after': '5' }, 'x-missing')).toBeUndefined();
  });

  it('joins array values (node:http IncomingHttpHeaders) and ignores non-string values', () => {
    expect(readHeader({ 'set-cookie': ['a=1', 'b=2'] }, 'set-cookie')).toBe('a=1, b=2');
    expect(readHeader({ 'retry-after': 5 } as never, 'retry-after')).toBeUndefined();
    expect(readHeader({ 'retry-after': { join: 1 } } as never, 'retry-after')).toBeUndefined();
    expect(readHeader({ 'retry-after': null } as never, 'retry-after')).toBeUndefined();
  });

  it('does not read inherited properties', () => {
    expect(readHeader({}, 'constructor')).toBeUndefined();
    expect(readHeader({}, 'toString')).toBeUndefined();
  });
});

describe('hasQuotaHeaders', () => {
  const names = ['RateLimit', 'X-RateLimit-Remaining', 'RateLimit-Remaining'];

  it('finds each quota header in a record, in any case, among others', () => {
    for (const name of names) {
      for (const key of [name, name.toLowerCase(), name.toUpperCase()]) {
        expect(hasQuotaHeaders({ 'content-type': 'text/plain', [key]: '5', date: 'x' })).toBe(true);
        expect(hasQuotaHeaders(new Headers({ [key]: '5' }))).toBe(true);
      }
    }
  });

  it('takes an array value and ignores a value that is no header', () => {
    expect(hasQuotaHeaders({ 'x-ratelimit-remaining': ['5'] })).toBe(true);
    expect(hasQuotaHeaders({ ratelimit: 5 } as never)).toBe(false);
    expect(hasQuotaHeaders({ 'ratelimit-remaining': undefined })).toBe(false);
  });

  it('is false without one, whatever else there is (same-length names too)', () => {
    expect(hasQuotaHeaders({})).toBe(false);
    expect(hasQuotaHeaders(new Headers({ 'content-type': 'text/plain' }))).toBe(false);
    expect(
      hasQuotaHeaders({
        ratelimis: '1',
        'ratelimit-remainind': '1',
        'x-ratelimit-remainint': '1',
        'x-ratelimit-limit': '10',
      }),
    ).toBe(false);
  });
});

describe('readServerPacing: precedence and fall-through', () => {
  type Row = [string, Record<string, string>, number | undefined, string | undefined];
  const epochMs = NOW + 4_000;
  const epochS = Math.floor(NOW / 1000) + 5;
  const rows: Row[] = [
    ['nothing', {}, undefined, undefined],
    ['retry-after-ms', { 'retry-after-ms': '1500' }, 1_500, 'retry-after-ms'],
    ['retry-after-ms decimal', { 'retry-after-ms': '12.5' }, 12.5, 'retry-after-ms'],
    [
      'retry-after-ms beats Retry-After',
      { 'retry-after-ms': '1500', 'retry-after': '3' },
      1_500,
      'retry-after-ms',
    ],
    [
      'malformed retry-after-ms falls through',
      { 'retry-after-ms': '-1', 'retry-after': '3' },
      3_000,
      'retry-after',
    ],
    ['retry-after-ms "1e3" is malformed', { 'retry-after-ms': '1e3' }, undefined, undefined],
    ['Retry-After seconds', { 'retry-after': '3' }, 3_000, 'retry-after'],
    ['Retry-After date', { 'retry-after': 'Thu, 01 Jan 2026 00:00:09 GMT' }, 9_000, 'retry-after'],
    [
      'Retry-After beats RateLimit',
      { 'retry-after': '3', ratelimit: '"default";r=0;t=7' },
      3_000,
      'retry-after',
    ],
    [
      'malformed Retry-After falls through to RateLimit',
      { 'retry-after': 'soon', ratelimit: '"default";r=0;t=7' },
      7_000,
      'ratelimit',
    ],
    ['RateLimit t= with r=0', { ratelimit: '"default";r=0;t=7' }, 7_000, 'ratelimit'],
    ['RateLimit t= without r', { ratelimit: '"default";t=7' }, 7_000, 'ratelimit'],
    ['RateLimit r>0: not a delay', { ratelimit: '"default";r=5;t=7' }, undefined, undefined],
    [
      'older draft limit/remaining/reset',
      { ratelimit: 'limit=100, remaining=0, reset=9' },
      9_000,
      'ratelimit',
    ],
    [
      'older draft with remaining>0',
      { ratelimit: 'limit=100, remaining=3, reset=9' },
      undefined,
      undefined,
    ],
    [
      'RateLimit-Reset',
      { 'ratelimit-reset': '12', 'ratelimit-remaining': '0' },
      12_000,
      'ratelimit',
    ],
    ['RateLimit-Reset, remaining absent', { 'ratelimit-reset': '12' }, 12_000, 'ratelimit'],
    [
      'RateLimit-Reset, remaining 4',
      { 'ratelimit-reset': '12', 'ratelimit-remaining': '4' },
      undefined,
      undefined,
    ],
    [
      'RateLimit beats X-RateLimit-Reset',
      { ratelimit: '"default";r=0;t=7', 'x-ratelimit-reset': '30' },
      7_000,
      'ratelimit',
    ],
    [
      'malformed RateLimit t falls through to X-RateLimit-Reset',
      { ratelimit: '"default";r=0;t=soon', 'x-ratelimit-reset': '30' },
      30_000,
      'x-ratelimit-reset',
    ],
    ['X-RateLimit-Reset delta seconds', { 'x-ratelimit-reset': '30' }, 30_000, 'x-ratelimit-reset'],
    ['X-RateLimit-Reset delta decimal', { 'x-ratelimit-reset': '1.5' }, 1_500, 'x-ratelimit-reset'],
    [
      'X-RateLimit-Reset epoch seconds',
      { 'x-ratelimit-reset': String(epochS) },
      5_000,
      'x-ratelimit-reset',
    ],
    [
      'X-RateLimit-Reset epoch ms',
      { 'x-ratelimit-reset': String(epochMs) },
      4_000,
      'x-ratelimit-reset',
    ],
    [
      'X-RateLimit-Reset epoch in the past',
      { 'x-ratelimit-reset': String(epochS - 60) },
      0,
      'x-ratelimit-reset',
    ],
    ['X-RateLimit-Reset malformed', { 'x-ratelimit-reset': '-30' }, undefined, undefined],
    [
      'X-RateLimit-Reset with remaining 0',
      { 'x-ratelimit-reset': '30', 'x-ratelimit-remaining': '0' },
      30_000,
      'x-ratelimit-reset',
    ],
    [
      'X-RateLimit-Reset with remaining 2',
      { 'x-ratelimit-reset': '30', 'x-ratelimit-remaining': '2' },
      undefined,
      undefined,
    ],
    [
      'remaining > 0 does not mute Retry-After',
      { 'retry-after': '3', 'x-ratelimit-remaining': '2' },
      3_000,
      'retry-after',
    ],
    [
      'Retry-After 0 is a valid hint',
      { 'retry-after': '0', 'x-ratelimit-reset': '30' },
      0,
      'retry-after',
    ],
  ];

  describe.each([
    ['record', (h: Record<string, string>): HeaderSource => h],
    [
      'record, mixed-case keys',
      (h: Record<string, string>): HeaderSource =>
        Object.fromEntries(
          Object.entries(h).map(([k, v], i) => [
            i % 2
              ? k.toUpperCase()
              : k.replace(/(^|-)([a-z])/g, (_m, d: string, c: string) => d + c.toUpperCase()),
            v,
          ]),
        ),
    ],
    ['Headers', (h: Record<string, string>): HeaderSource => new Headers(h)],
  ])('from a %s', (_kind, make) => {
    it.each(rows)('%s', (_name, headers, delay, source) => {
      const pacing = readServerPacing(make(headers), NOW);
      expect(pacing.delay).toBe(delay);
      expect(pacing.source).toBe(source);
    });
  });

  it.each([
    [{ ratelimit: '"default";r=0;t=7' }, 0],
    [{ ratelimit: '"default";r=42;t=7' }, 42],
    [{ ratelimit: 'limit=100, remaining=17, reset=9' }, 17],
    [{ 'ratelimit-remaining': '3' }, 3],
    [{ 'x-ratelimit-remaining': '8' }, 8],
    [{ 'X-RateLimit-Remaining': '8' }, 8],
    [{ 'x-ratelimit-remaining': '-1' }, undefined],
    [{ 'x-ratelimit-remaining': '1.5' }, undefined],
    [{}, undefined],
  ])('reports remaining from %o → %s', (headers, remaining) => {
    const pacing = readServerPacing(headers, NOW);
    expect(pacing.remaining).toBe(remaining);
    expect('remaining' in pacing).toBe(remaining !== undefined);
  });

  it('an absent hint leaves delay and source out of the object', () => {
    expect(readServerPacing({}, NOW)).toEqual({});
  });

  it.each([
    ['retry-after', '9'.repeat(400)],
    ['retry-after-ms', '9'.repeat(400)],
    ['ratelimit', `"default";r=0;t=${'9'.repeat(400)}`],
    ['ratelimit-reset', '9'.repeat(400)],
    ['x-ratelimit-reset', '9'.repeat(400)],
  ])('a huge %s is a finite, very long delay', (name, value) => {
    const { delay } = readServerPacing({ [name]: value }, NOW);
    expect(Number.isFinite(delay)).toBe(true);
    expect(delay).toBeGreaterThan(MAX_DELAY);
    expect(parseServerDelay({ [name]: value }, { now: NOW, cap: 60_000 })).toBe(60_000);
  });
});

describe('parseServerDelay', () => {
  it('clamps to the cap', () => {
    expect(parseServerDelay({ 'retry-after': '3' }, { now: NOW })).toBe(3_000);
    expect(parseServerDelay({ 'retry-after': '3' }, { now: NOW, cap: 1_000 })).toBe(1_000);
    expect(parseServerDelay({ 'retry-after': '999999999' }, { now: NOW })).toBe(MAX_DELAY);
    expect(parseServerDelay({}, { now: NOW })).toBeUndefined();
    expect(parseServerDelay(new Headers({ 'Retry-After': '2' }), { now: NOW })).toBe(2_000);
  });

  it('never throws on a hostile headers source', () => {
    const throwing = {
      get(): string {
        throw new Error('boom');
      },
    };
    expect(parseServerDelay(throwing)).toBeUndefined();
    const proxy = new Proxy(
      {},
      {
        get() {
          throw new Error('boom');
        },
        ownKeys() {
          throw new Error('boom');
        },
      },
    );
    expect(parseServerDelay(proxy as HeaderSource)).toBeUndefined();
  });

  it('never returns a non-finite number, even for a non-finite now', () => {
    for (const now of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
      for (const headers of [
        { 'retry-after': 'Thu, 01 Jan 2026 00:00:09 GMT' },
        { 'x-ratelimit-reset': String(NOW) },
        { 'retry-after': '3' },
      ]) {
        const delay = parseServerDelay(headers, { now });
        expect(
          delay === undefined || Number.isFinite(delay),
          `${now} ${JSON.stringify(headers)}`,
        ).toBe(true);
      }
    }
  });

  const NAMES = [
    'retry-after-ms',
    'retry-after',
    'Retry-After',
    'ratelimit',
    'RateLimit',
    'ratelimit-reset',
    'ratelimit-remaining',
    'x-ratelimit-reset',
    'X-RateLimit-Reset',
    'x-ratelimit-remaining',
  ] as const;
  /** Strings that look like header values, plus arbitrary ones. */
  const valueArb = fc.oneof(
    fc.string(),
    fc.string({ unit: 'binary' }),
    fc.stringMatching(/^\d{1,400}$/),
    fc.stringMatching(/^\d{1,20}\.\d{1,20}$/),
    fc.integer({ min: -1e6, max: 1e13 }).map(String),
    fc.date({ noInvalidDate: true }).map((d) => d.toUTCString()),
    fc
      .tuple(fc.integer({ min: -5, max: 1e6 }), fc.integer({ min: -5, max: 1e6 }))
      .map(([r, t]) => `"default";r=${r};t=${t}`),
  );
  const nowArb = fc.integer({ min: 0, max: 8.64e15 });
  const capArb = fc.integer({ min: 0, max: MAX_DELAY });
  const check = (delay: number | undefined, cap: number) =>
    delay === undefined || (Number.isFinite(delay) && delay >= 0 && delay <= cap);

  it.each(NAMES)('property: arbitrary values of %s → undefined or finite in [0, cap]', (name) => {
    fc.assert(
      fc.property(valueArb, nowArb, capArb, (value, now, cap) => {
        const fromRecord = parseServerDelay({ [name]: value }, { now, cap });
        const fromArray = parseServerDelay({ [name]: [value, value] }, { now, cap });
        let fromHeaders: number | undefined;
        try {
          fromHeaders = parseServerDelay(new Headers({ [name]: value }), { now, cap });
        } catch {
          // Headers rejects some strings itself; parseServerDelay was never called.
        }
        return check(fromRecord, cap) && check(fromArray, cap) && check(fromHeaders, cap);
      }),
    );
  });

  it('property: arbitrary header records → undefined or finite in [0, cap]', () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.oneof(fc.constantFrom(...NAMES), fc.string()), fc.anything()),
        nowArb,
        capArb,
        (headers, now, cap) => check(parseServerDelay(headers as HeaderSource, { now, cap }), cap),
      ),
    );
  });

  it('property: readServerPacing delay is finite and ≥ 0 for any combination of hints', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.constantFrom(...NAMES), valueArb), nowArb, (headers, now) => {
        const { delay, source } = readServerPacing(headers, now);
        if (delay === undefined) return source === undefined;
        return Number.isFinite(delay) && delay >= 0 && source !== undefined;
      }),
    );
  });
});
