/**
 * The public surface (issue 14, item 4): the core entry exports what a user
 * calls, nothing an implementer or the internals need; `staunch/store` holds
 * the store contract and operations. A name added or removed here is a
 * decision, written in docs/architecture.md.
 */
import { describe, expect, test } from 'vitest';
import * as core from '../../src/index.js';
import * as store from '../../src/store/index.js';

describe('runtime exports', () => {
  test('the core entry', () => {
    expect(Object.keys(core).sort()).toEqual(
      [
        'CircuitOpenError',
        'DEFAULT_METHODS',
        'DEFAULT_STATUSES',
        'DeadlineExceededError',
        'IdempotencyKeyMismatchError',
        'NetworkError',
        'QueueFullError',
        'QueueTimeoutError',
        'RateLimitedError',
        'ResumeError',
        'SsrfBlockedError',
        'StaunchError',
        'constantBackoff',
        'createFetch',
        'exponentialBackoff',
        'isStaunchError',
        'memoryStore',
        'originKey',
        'parseHttpDate',
        'parseRetryAfter',
        'parseServerDelay',
        'readServerPacing',
        'redactUrl',
        'systemClock',
      ].sort(),
    );
  });

  test('staunch/store: the contract and the operations, for store implementers', () => {
    expect(Object.keys(store).sort()).toEqual(
      [
        'BREAKER_BUCKETS',
        'BREAKER_KEY_PREFIX',
        'BUDGET_KEY_PREFIX',
        'RATE_KEY_PREFIX',
        'breakerAdmit',
        'breakerRecord',
        'budgetDeposit',
        'budgetWithdraw',
        'memoryStore',
        'rateAcquire',
        'rateFeedback',
        'rateRefund',
      ].sort(),
    );
    for (const op of [store.breakerAdmit, store.rateFeedback, store.budgetDeposit]) {
      expect(op.name).toMatch(/^staunch\./);
      expect(Object.isFrozen(op)).toBe(true);
    }
  });
});
