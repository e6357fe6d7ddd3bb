/**
 * The retry decision as a pure table (issue 14, item 1): each row of the
 * README's "When is an outcome retried?" as a case of classify + decide, for a
 * replayable and a non-replayable request, without sockets; then the delay
 * rules of DESIGN.md ("Delays"), and properties over random inputs.
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import type { RetryReason } from '../../src/events.js';
import { classifyError, classifyStatus, type RetryScope } from '../../src/retry/classify.js';
import { type DecisionInput, decide } from '../../src/retry/decide.js';

const STATUSES = new Set([408, 429, 500, 502, 503, 504, 529]);

function input(over: Partial<DecisionInput> = {}): DecisionInput {
  return {
    replayable: true,
    resendable: () => true,
    attempt: 1,
    attempts: 3,
    timeLeft: 60_000,
    hint: undefined,
    hintSource: undefined,
    maxRetryAfter: 60_000,
    backoff: () => 250,
    random: () => 0.5,
    ...over,
  };
}

const statusVerdict = (status: number, headers: Record<string, string> = {}) => ({
  scope: classifyStatus(status, headers, STATUSES),
  reason: 'status' as RetryReason,
  stale: false,
});

const errorVerdict = (code: string) => {
  const kind = classifyError(Object.assign(new Error('x'), { code }));
  const scope: RetryScope = kind === 'unsent' ? 'any' : kind === 'fatal' ? 'never' : 'replayable';
  return {
    scope,
    reason: (kind === 'unsent' ? 'unsent' : 'maybe-sent') as RetryReason,
    stale: false,
  };
};

const timeoutVerdict = {
  scope: 'replayable' as RetryScope,
  reason: 'timeout' as RetryReason,
  stale: false,
};

/** What happens to a replayable and to a non-replayable request (a POST without a key). */
function both(verdict: ReturnType<typeof statusVerdict>) {
  return [
    decide(verdict, input({ replayable: true })).action,
    decide(verdict, input({ replayable: false })).action,
  ];
}

describe('the README table, row by row', () => {
  test.each([
    ['connection refused', errorVerdict('ECONNREFUSED'), ['retry', 'retry']],
    ['DNS failure', errorVerdict('ENOTFOUND'), ['retry', 'retry']],
    ['connect timeout', errorVerdict('UND_ERR_CONNECT_TIMEOUT'), ['retry', 'retry']],
    ['TLS handshake failure', errorVerdict('ERR_TLS_HANDSHAKE_TIMEOUT'), ['retry', 'retry']],
    ['429', statusVerdict(429), ['retry', 'retry']],
    ['408', statusVerdict(408), ['retry', 'retry']],
    ['503 with Retry-After', statusVerdict(503, { 'retry-after': '1' }), ['retry', 'retry']],
    [
      'x-should-retry: true on a 400',
      statusVerdict(400, { 'x-should-retry': 'true' }),
      ['retry', 'retry'],
    ],
    [
      'x-should-retry: false on a 503',
      statusVerdict(503, { 'x-should-retry': 'false' }),
      ['done', 'done'],
    ],
    ['500', statusVerdict(500), ['retry', 'give-up']],
    ['502', statusVerdict(502), ['retry', 'give-up']],
    ['503 without Retry-After', statusVerdict(503), ['retry', 'give-up']],
    ['504', statusVerdict(504), ['retry', 'give-up']],
    ['529', statusVerdict(529), ['retry', 'give-up']],
    ['reset after sending', errorVerdict('ECONNRESET'), ['retry', 'give-up']],
    ['attempt timeout after sending', timeoutVerdict, ['retry', 'give-up']],
    ['400', statusVerdict(400), ['done', 'done']],
    ['404', statusVerdict(404), ['done', 'done']],
    ['409', statusVerdict(409), ['done', 'done']],
    ['an expired certificate', errorVerdict('CERT_HAS_EXPIRED'), ['done', 'done']],
  ])('%s → replayable: %s', (_name, verdict, expected) => {
    expect(both(verdict)).toEqual(expected);
  });

  test('a ReadableStream body already sent: never again, whatever the outcome', () => {
    const sent = input({ resendable: () => false });
    expect(decide(statusVerdict(503), sent)).toEqual({
      action: 'give-up',
      reason: 'body-not-replayable',
    });
    expect(decide(errorVerdict('ECONNRESET'), sent)).toMatchObject({
      reason: 'body-not-replayable',
    });
  });

  test('a non-replayable maybe-sent failure names why', () => {
    expect(decide(statusVerdict(500), input({ replayable: false }))).toEqual({
      action: 'give-up',
      reason: 'not-replayable',
    });
  });
});

describe('delays', () => {
  test('no hint: the backoff, charged to the budget', () => {
    expect(decide(statusVerdict(503), input({ backoff: () => 400 }))).toEqual({
      action: 'retry',
      delay: 400,
      source: 'backoff',
      charged: true,
    });
  });

  test('Retry-After: 0 is retried at once, with no spread', () => {
    const d = decide(
      statusVerdict(429),
      input({ hint: 0, hintSource: 'retry-after', random: () => 0.99 }),
    );
    expect(d).toEqual({ action: 'retry', delay: 0, source: 'retry-after', charged: true });
  });

  test("the server's hint wins, plus a spread of at most 20 % (and at most 1 s)", () => {
    const d = decide(statusVerdict(429), input({ hint: 2_000, hintSource: 'retry-after' }));
    // random() = 0.5 → half of min(1000, max(100, 400)) = 200.
    expect(d).toEqual({ action: 'retry', delay: 2_200, source: 'retry-after', charged: true });
  });

  test('a hint over maxRetryAfter, or past the deadline, ends the retrying at once', () => {
    expect(decide(statusVerdict(429), input({ hint: 61_000 }))).toEqual({
      action: 'give-up',
      reason: 'retry-after',
      delay: 61_000,
    });
    expect(decide(statusVerdict(429), input({ hint: 5_000, timeLeft: 4_000 }))).toEqual({
      action: 'give-up',
      reason: 'deadline',
      delay: 5_000,
    });
  });

  test('a backoff that cannot fit before the deadline gives up; the spread never passes it', () => {
    expect(decide(statusVerdict(503), input({ backoff: () => 900, timeLeft: 800 }))).toEqual({
      action: 'give-up',
      reason: 'deadline',
      delay: 900,
    });
    const d = decide(statusVerdict(429), input({ hint: 700, timeLeft: 750, random: () => 0.99 }));
    expect(d).toMatchObject({ action: 'retry', delay: 749 });
  });

  test('a keyed 409 (its key in flight) waits its backoff or hint, charged to nothing', () => {
    const inFlight = { ...statusVerdict(409), scope: 'any' as const, inFlight: true };
    expect(decide(inFlight, input({ backoff: () => 400 }))).toEqual({
      action: 'retry',
      delay: 400,
      source: 'backoff',
      charged: false,
    });
    const hinted = decide(inFlight, input({ hint: 1_000, hintSource: 'retry-after' }));
    expect(hinted).toMatchObject({ action: 'retry', source: 'retry-after', charged: false });
  });

  test('the stale keep-alive race: at once, charged to nothing', () => {
    const stale = { ...errorVerdict('ECONNRESET'), stale: true };
    expect(decide(stale, input())).toEqual({
      action: 'retry',
      delay: 0,
      source: 'backoff',
      charged: false,
    });
  });

  test('the stale keep-alive race past the deadline gives up instead of going at once', () => {
    const stale = { ...errorVerdict('ECONNRESET'), stale: true };
    expect(decide(stale, input({ timeLeft: 0 }))).toEqual({
      action: 'give-up',
      reason: 'deadline',
      delay: 0,
    });
  });

  test('the last attempt gives up on attempts, and a non-finite backoff means at once', () => {
    expect(decide(statusVerdict(503), input({ attempt: 3 }))).toEqual({
      action: 'give-up',
      reason: 'attempts',
    });
    expect(decide(statusVerdict(503), input({ backoff: () => Number.NaN }))).toMatchObject({
      delay: 0,
    });
  });
});

describe('properties', () => {
  const verdicts = fc.record({
    scope: fc.constantFrom<RetryScope>('any', 'replayable', 'never'),
    reason: fc.constantFrom<RetryReason>('status', 'unsent', 'maybe-sent', 'timeout'),
    stale: fc.boolean(),
  });
  const inputs = fc.record({
    replayable: fc.boolean(),
    resendable: fc.boolean(),
    attempt: fc.integer({ min: 1, max: 10 }),
    attempts: fc.integer({ min: 1, max: 10 }),
    timeLeft: fc.double({ min: 0, max: 1e6, noNaN: true }),
    hint: fc.option(fc.double({ min: 0, max: 1e6, noNaN: true }), { nil: undefined }),
    backoff: fc.double({ min: -10, max: 1e6, noNaN: true }),
    random: fc.double({ min: 0, max: 0.999, noNaN: true }),
  });

  test('a retry always fits strictly before the deadline and never repeats a non-replayable maybe-sent request', () => {
    fc.assert(
      fc.property(verdicts, inputs, (v, i) => {
        const d = decide(
          v,
          input({
            ...i,
            resendable: () => i.resendable,
            backoff: () => i.backoff,
            random: () => i.random,
          }),
        );
        if (d.action !== 'retry') return;
        expect(d.delay).toBeGreaterThanOrEqual(0);
        expect(d.delay).toBeLessThan(i.timeLeft);
        expect(i.attempt).toBeLessThan(i.attempts);
        expect(v.scope).not.toBe('never');
        if (v.scope === 'replayable') expect(i.replayable).toBe(true);
        expect(i.resendable).toBe(true);
      }),
    );
  });
});
