/**
 * The executor hedges from `LogicalRequest.hedge` alone, with no adapter help
 * but the Exchange (as the lab's simulator drives it): an in-memory exchange
 * whose attempts hang until aborted, on a clock moved by hand.
 */
import { describe, expect, it } from 'vitest';
import { DeadlineExceededError } from '../../src/errors.js';
import { DEFAULT_HEDGE } from '../../src/options.js';
import { flush } from '../helpers/clock.js';
import { settled } from '../helpers/harness.js';
import { harness, logical, ScriptedExchange } from './support.js';

describe('executor: hedged rounds from LogicalRequest.hedge', () => {
  it('max 2: a hedge every delay while none answers; the third attempt wins, the two before are aborted', async () => {
    const h = harness({ manual: true });
    const exchange = new ScriptedExchange(['hang', 'hang', 200]);
    const request = logical({ hedge: { ...DEFAULT_HEDGE, delay: 50, max: 2 } });
    const pending = h.executor.run(request, exchange);
    await flush();
    expect(exchange.sent).toEqual([1]);
    h.clock.advance(50);
    await flush();
    expect(exchange.sent).toEqual([1, 2]);
    h.clock.advance(50);
    const response = await pending;
    expect(response.status).toBe(200);
    expect(exchange.sent).toEqual([1, 2, 3]);
    expect(exchange.signals.map((s) => s.aborted)).toEqual([true, true, false]);
    expect(h.of('attemptStart').map((e) => e.hedge)).toEqual([undefined, true, true]);
    expect(h.of('attempt').map((e) => [e.attempt, e.lost])).toEqual([
      [3, undefined],
      [1, true],
      [2, true],
    ]);
    expect(h.of('end')).toMatchObject([{ attempts: 3, hedges: 2, won: 3 }]);
  });

  it('the caller aborts: every attempt in flight is aborted, the request rejects with its reason', async () => {
    const h = harness({ manual: true });
    const exchange = new ScriptedExchange(['hang', 'hang']);
    const controller = new AbortController();
    const request = logical({
      signal: controller.signal,
      hedge: { ...DEFAULT_HEDGE, delay: 50 },
    });
    const state = settled(h.executor.run(request, exchange));
    await flush();
    h.clock.advance(50);
    await flush();
    expect(exchange.sent).toEqual([1, 2]);
    const reason = new Error('caller gave up');
    controller.abort(reason);
    await flush();
    expect(state).toMatchObject({ done: true, error: reason });
    expect(exchange.signals.every((s) => s.aborted)).toBe(true);
  });

  it('the total deadline ends the hedge with the attempt it hedges', async () => {
    const h = harness({ manual: true });
    const exchange = new ScriptedExchange(['hang', 'hang']);
    const request = logical({ timeout: { total: 100 }, hedge: { ...DEFAULT_HEDGE, delay: 50 } });
    const state = settled(h.executor.run(request, exchange));
    await flush();
    h.clock.advance(50);
    await flush();
    expect(exchange.sent).toEqual([1, 2]);
    h.clock.advance(50);
    await flush();
    expect(state.done).toBe(true);
    expect(state.error).toBeInstanceOf(DeadlineExceededError);
    expect((state.error as DeadlineExceededError).timeout).toBe('total');
    expect(exchange.signals.every((s) => s.aborted)).toBe(true);
    expect(h.of('giveUp')).toMatchObject([{ reason: 'deadline', attempts: 2 }]);
  });

  it('an exchange that can no longer resend (a stream read) gets no hedge', async () => {
    const h = harness({ manual: true });
    const exchange = new ScriptedExchange(['hang']);
    exchange.resendableAnswer = false;
    const request = logical({ hedge: { ...DEFAULT_HEDGE, delay: 50 } });
    const state = settled(h.executor.run(request, exchange));
    await flush();
    h.clock.advance(50);
    await flush();
    expect(exchange.sent).toEqual([1]);
    expect(state.done).toBe(false);
    expect(h.of('attemptStart')).toHaveLength(1);
  });
});
