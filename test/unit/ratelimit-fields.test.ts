import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  mostRestrictive,
  PACED_WINDOW_MAX,
  pacingPolicy,
  parseRateLimit,
  parseRateLimitPolicy,
  type RateLimitState,
} from '../../src/retry/ratelimit-fields.js';

/** The bytes of `pk=:cHN0LTEyMw==:`: the ASCII of "pst-123". */
const PK = new TextEncoder().encode('pst-123');

describe('parseRateLimit: the draft RateLimit field', () => {
  it('reads one policy: name, remaining r and reset t', () => {
    expect(parseRateLimit('"default";r=50;t=30')).toEqual([
      { policy: 'default', remaining: 50, reset: 30 },
    ]);
  });

  it('reads several policies in field order, and two field lines joined', () => {
    expect(parseRateLimit('"burst";r=0;t=5, "daily";r=900;t=86000')).toEqual([
      { policy: 'burst', remaining: 0, reset: 5 },
      { policy: 'daily', remaining: 900, reset: 86000 },
    ]);
  });

  it('reads a partition key pk as its bytes', () => {
    expect(parseRateLimit('"peruser";r=3;t=10;pk=:cHN0LTEyMw==:')).toEqual([
      { policy: 'peruser', remaining: 3, reset: 10, partitionKey: PK },
    ]);
  });

  it('ignores unknown parameters, and reads a Token name', () => {
    expect(parseRateLimit('default;r=1;t=2;x="y";z;w=1.5')).toEqual([
      { policy: 'default', remaining: 1, reset: 2 },
    ]);
  });

  it('drops a policy with a bad r, t or pk and keeps the others', () => {
    expect(
      parseRateLimit(
        '"a";r=-1;t=3, "b";r=1.5, "c";t="9", "d";r=2;pk=abc, 7;r=1, ("x");r=0, "e";r=4',
      ),
    ).toEqual([{ policy: 'e', remaining: 4 }]);
  });

  it('ignores the whole field when it is not a valid List', () => {
    expect(parseRateLimit('"default";r=50;t=30,')).toBeUndefined();
    expect(parseRateLimit('limit=100, remaining=0, reset=9')).toBeUndefined();
    expect(parseRateLimit('"a";r=0;t=1, "b";r=0;t=1234567890123456')).toBeUndefined();
  });
});

describe('parseRateLimitPolicy: the draft RateLimit-Policy field', () => {
  it('reads named quotas and windows, requests by default', () => {
    expect(parseRateLimitPolicy('"burst";q=100;w=60,"daily";q=1000;w=86400')).toEqual([
      { policy: 'burst', quota: 100, window: 60, unit: 'requests' },
      { policy: 'daily', quota: 1000, window: 86400, unit: 'requests' },
    ]);
  });

  it('reads the quota unit qu and the partition key pk', () => {
    expect(
      parseRateLimitPolicy('"peruser";q=65535;qu="content-bytes";w=10;pk=:cHN0LTEyMw==:'),
    ).toEqual([
      { policy: 'peruser', quota: 65535, window: 10, unit: 'content-bytes', partitionKey: PK },
    ]);
  });

  it('reads a policy without a window, and ignores unknown parameters', () => {
    expect(parseRateLimitPolicy('"conc";q=10;qu="concurrent-requests";future=?1')).toEqual([
      { policy: 'conc', quota: 10, unit: 'concurrent-requests' },
    ]);
  });

  it('drops a policy without q, or with a bad q, w, qu or pk', () => {
    expect(
      parseRateLimitPolicy(
        '"a";w=60, "b";q=-1, "c";q=5;w=1.5, "d";q=5;qu=requests, "e";q=5;pk="k", "f";q=5;w=1',
      ),
    ).toEqual([{ policy: 'f', quota: 5, window: 1, unit: 'requests' }]);
  });

  it('ignores the whole field when it is not a valid List', () => {
    expect(parseRateLimitPolicy('"burst";q=100;w=60;"daily"')).toBeUndefined();
  });
});

describe('mostRestrictive: the policy that paces', () => {
  const s = (policy: string, remaining?: number, reset?: number): RateLimitState => ({
    policy,
    ...(remaining === undefined ? {} : { remaining }),
    ...(reset === undefined ? {} : { reset }),
  });

  it.each([
    ['the least remaining', [s('a', 50, 1), s('b', 3, 60), s('c', 9, 2)], 'b'],
    ['of two spent, the later reset', [s('a', 0, 5), s('b', 0, 60), s('c', 0, 10)], 'b'],
    ['a spent one over one with requests left', [s('a', 7, 600), s('b', 0, 2)], 'b'],
    ['one with r over one without', [s('a', undefined, 900), s('b', 40, 1)], 'b'],
    ['without any r, the later reset', [s('a', undefined, 3), s('b', undefined, 8)], 'b'],
    ['a tie on r: the later reset', [s('a', 2, 10), s('b', 2, 30)], 'b'],
    ['a tie with no reset keeps the first', [s('a', 2), s('b', 2)], 'a'],
  ])('picks %s', (_, states, expected) => {
    expect(mostRestrictive(states)?.policy).toBe(expected);
  });

  it('picks nothing from no policy', () => {
    expect(mostRestrictive([])).toBeUndefined();
  });
});

describe('pacingPolicy: the RateLimit-Policy quota that paces', () => {
  const paces = (field: string) => pacingPolicy(parseRateLimitPolicy(field) ?? []);

  // The draft's examples (draft-ietf-httpapi-ratelimit-headers), and the rules around them.
  it.each([
    ['one quota', '"default";q=100;w=10', { quota: 100, window: 10 }],
    ['a quota per minute', '"peruser";q=100;w=60', { quota: 100, window: 60 }],
    [
      'of a burst and a daily quota, the burst: a daily window is not paced',
      '"burst";q=100;w=60,"daily";q=1000;w=86400',
      { quota: 100, window: 60 },
    ],
    [
      'of two paced quotas, the least q / w',
      '"a";q=50;w=1, "b";q=100;w=10',
      { quota: 100, window: 10 },
    ],
    [
      'a tie on q / w: the shorter window',
      '"a";q=100;w=10, "b";q=10;w=1',
      { quota: 10, window: 1 },
    ],
    [
      'qu="requests" counts, content-bytes and concurrent-requests do not',
      '"bytes";q=5;qu="content-bytes";w=1, "conc";q=2;qu="concurrent-requests", "req";q=20;qu="requests";w=2',
      { quota: 20, window: 2 },
    ],
    [
      'policies of different partitions each apply: the most restrictive paces',
      '"a";q=10;w=1;pk=:YQ==:, "b";q=5;w=1;pk=:Yg==:',
      { quota: 5, window: 1 },
    ],
    ['the longest paced window', `"w";q=600;w=${PACED_WINDOW_MAX}`, { quota: 600, window: 300 }],
  ])('%s', (_, field, expected) => {
    expect(paces(field)).toEqual(expected);
  });

  it.each([
    ['a content-bytes quota alone', '"peruser";q=65535;qu="content-bytes";w=10;pk=:cHN0LTEyMw==:'],
    ['a quota without a window', '"a";q=10'],
    ['a zero quota or window', '"a";q=0;w=1, "b";q=10;w=0'],
    ['a window past the limit', `"w";q=6000;w=${PACED_WINDOW_MAX + 1}`],
    ['an unknown unit', '"a";q=10;w=1;qu="tokens"'],
  ])('paces nothing for %s', (_, field) => {
    expect(paces(field)).toBeUndefined();
  });

  it('never throws, and what it picks is a paced quota of the field, whatever the text', () => {
    const near = fc
      .array(
        fc.constantFrom(
          '"a"',
          '"b"',
          'q=',
          'w=',
          'qu=',
          '"requests"',
          ';',
          ',',
          ' ',
          '1',
          '0',
          '9',
          ':YQ==:',
          'pk=',
          '-',
          '.5',
        ),
        { maxLength: 30 },
      )
      .map((parts) => parts.join(''));
    fc.assert(
      fc.property(fc.oneof(near, fc.string({ maxLength: 60 })), (field) => {
        const policies = parseRateLimitPolicy(field);
        const picked = pacingPolicy(policies ?? []);
        if (picked === undefined) return;
        expect(picked.quota).toBeGreaterThan(0);
        expect(picked.window).toBeGreaterThan(0);
        expect(picked.window).toBeLessThanOrEqual(PACED_WINDOW_MAX);
        const rate = picked.quota / picked.window;
        for (const p of policies ?? []) {
          if (p.unit !== 'requests' || !(p.quota > 0) || p.window === undefined) continue;
          if (p.window > 0 && p.window <= PACED_WINDOW_MAX) {
            expect(rate).toBeLessThanOrEqual(p.quota / p.window);
          }
        }
      }),
      { numRuns: 2000 },
    );
  });
});
