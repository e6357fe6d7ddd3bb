import { describe, expect, it } from 'vitest';
import { hasQuotaHeaders, readServerPacing } from '../../src/retry/server-delay.js';

/** 2026-01-01T00:00:00Z */
const NOW = Date.UTC(2026, 0, 1);

describe('readServerPacing: several RateLimit policies', () => {
  it.each([
    [
      'the spent policy paces, listed after one with requests left',
      '"daily";r=900;t=86000, "burst";r=0;t=5',
      { remaining: 0, delay: 5_000, source: 'ratelimit' },
    ],
    [
      'of two spent policies, the later reset',
      '"minute";r=0;t=5, "hour";r=0;t=600',
      { remaining: 0, delay: 600_000, source: 'ratelimit' },
    ],
    [
      'none spent: the least remaining, and no delay (its reset is the window)',
      '"a";r=50;t=1, "b";r=3;t=60',
      { remaining: 3, window: 60_000 },
    ],
    [
      'a policy with a mistyped t is dropped, not half-read',
      '"a";r=0;t=soon, "b";r=4;t=9',
      { remaining: 4, window: 9_000 },
    ],
    [
      'a partition key and unknown parameters change nothing',
      '"peruser";r=0;t=12;pk=:cHN0LTEyMw==:;foo=bar;q=5',
      { remaining: 0, delay: 12_000, source: 'ratelimit' },
    ],
    [
      'policies without r: the later reset is the delay',
      '"a";t=3, "b";t=8',
      { delay: 8_000, source: 'ratelimit' },
    ],
  ])('%s', (_, ratelimit, expected) => {
    expect(readServerPacing({ ratelimit }, NOW)).toEqual(expected);
  });

  it('a List without a valid policy leaves the X-RateLimit-* headers to speak', () => {
    const headers = {
      ratelimit: '"a";r=-1;t=3, "b";r=1.5',
      'x-ratelimit-remaining': '0',
      'x-ratelimit-reset': '30',
    };
    expect(readServerPacing(headers, NOW)).toEqual({
      remaining: 0,
      delay: 30_000,
      source: 'x-ratelimit-reset',
    });
  });

  it('a policy with r=0 and no t takes its reset from RateLimit-Reset', () => {
    const headers = { ratelimit: '"a";r=0, "b";r=7;t=100', 'ratelimit-reset': '4' };
    expect(readServerPacing(headers, NOW)).toEqual({
      remaining: 0,
      delay: 4_000,
      source: 'ratelimit',
    });
  });
});

describe('readServerPacing: RateLimit-Policy', () => {
  it('gives the quota that paces, beside RateLimit', () => {
    const headers = {
      'RateLimit-Policy': '"burst";q=100;w=60,"daily";q=1000;w=86400',
      RateLimit: '"burst";r=40;t=12',
    };
    expect(readServerPacing(headers, NOW)).toEqual({
      remaining: 40,
      window: 12_000,
      policy: { quota: 100, window: 60 },
    });
  });

  it('a malformed field gives nothing and breaks nothing', () => {
    for (const field of [
      '"burst";q=100;w=60,',
      'q=10, w=1',
      '"a";q=1.5;w=1',
      '"a";q=10;w=1;qu=requests',
    ]) {
      expect(readServerPacing({ 'ratelimit-policy': field, 'retry-after': '2' }, NOW)).toEqual({
        delay: 2_000,
        source: 'retry-after',
      });
    }
  });

  it('is a quota header, in a record of any case and in Headers', () => {
    expect(hasQuotaHeaders({ 'RateLimit-Policy': '"a";q=1;w=1' })).toBe(true);
    expect(hasQuotaHeaders(new Headers({ 'ratelimit-policy': '"a";q=1;w=1' }))).toBe(true);
    expect(hasQuotaHeaders({ 'ratelimit-policies': '"a";q=1;w=1' })).toBe(false);
  });
});

describe('readServerPacing: the window of a count with requests left', () => {
  it.each([
    ['RateLimit t', { ratelimit: '"q";r=7;t=2' }, { remaining: 7, window: 2_000 }],
    [
      'RateLimit-Reset',
      { 'ratelimit-remaining': '7', 'ratelimit-reset': '3' },
      { remaining: 7, window: 3_000 },
    ],
    [
      'X-RateLimit-Reset, epoch seconds',
      { 'x-ratelimit-remaining': '7', 'x-ratelimit-reset': String(NOW / 1000 + 4) },
      { remaining: 7, window: 4_000 },
    ],
    ['no reset told', { 'x-ratelimit-remaining': '7' }, { remaining: 7 }],
  ])('from %s', (_, headers, expected) => {
    expect(readServerPacing(headers, NOW)).toEqual(expected);
  });
});
