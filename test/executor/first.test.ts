/**
 * The hand-off for an adapter that sends attempt 1 itself (staunch/undici):
 * `first` admits it and returns its ticket, `firstDone` learns from its
 * outcome and either hands the response back or goes on in the loop,
 * `firstDeadline` is the error that ends it.
 */
import { describe, expect, test } from 'vitest';
import { DeadlineExceededError } from '../../src/errors.js';
import { type FakeResponse, harness, logical, ScriptedExchange } from './support.js';

/** A sink that records how the logical request ended. */
function sink() {
  const ended: { response?: FakeResponse; error?: unknown }[] = [];
  let done: () => void = () => {};
  const settled = new Promise<void>((resolve) => {
    done = resolve;
  });
  return {
    ended,
    settled,
    resolve(response: FakeResponse) {
      ended.push({ response });
      done();
    },
    reject(error: unknown) {
      ended.push({ error });
      done();
    },
  };
}

describe('Executor.first', () => {
  test('attempt 1 admitted: a ticket whose limit is the attempt deadline, nothing sent by it', () => {
    const h = harness();
    const exchange = new ScriptedExchange([]);
    const s = sink();
    const ticket = h.executor.first(
      logical({ timeout: { attempt: 2000, total: 9000 } }),
      exchange,
      s,
    );
    expect(ticket?.limit).toBe(2000);
    expect(exchange.sent).toEqual([]);
    expect(h.names()).toEqual(['attemptStart']);
  });

  test('the limit is what is left of the total when that is shorter', () => {
    const h = harness();
    const ticket = h.executor.first(
      logical({ timeout: { attempt: 2000, total: 1500 } }),
      new ScriptedExchange([]),
      sink(),
    );
    expect(ticket?.limit).toBe(1500);
    const error = h.executor.firstDeadline(ticket!);
    expect(error).toBeInstanceOf(DeadlineExceededError);
    expect(error.message).toBe(
      'GET https://api.example.com/v1/items: request exceeded timeout.total (1500 ms)',
    );
  });

  test('firstDone with a success: true, the adapter hands it over; the sink is not called', () => {
    const h = harness();
    const s = sink();
    const exchange = new ScriptedExchange([]);
    const ticket = h.executor.first(logical(), exchange, s)!;
    const response: FakeResponse = { status: 200, headers: {} };
    expect(h.executor.firstDone(ticket, { ok: true, response, unlink: () => {} }, s)).toBe(true);
    expect(s.ended).toEqual([]);
    expect(h.of('attempt')).toEqual([expect.objectContaining({ attempt: 1, status: 200 })]);
    expect(h.of('end')).toEqual([expect.objectContaining({ attempts: 1, status: 200 })]);
  });

  test('firstDone with a 503: false, the loop sends attempt 2 and ends in the sink', async () => {
    const h = harness();
    const s = sink();
    const exchange = new ScriptedExchange([200]);
    const ticket = h.executor.first(logical(), exchange, s)!;
    const failed: FakeResponse = { status: 503, headers: {} };
    expect(h.executor.firstDone(ticket, { ok: true, response: failed, unlink: () => {} }, s)).toBe(
      false,
    );
    await s.settled;
    expect(exchange.sent).toEqual([2]);
    expect(exchange.discarded).toEqual([failed]);
    expect(s.ended).toEqual([{ response: { status: 200, headers: {} } }]);
    expect(h.of('retry')).toEqual([expect.objectContaining({ attempt: 1, status: 503 })]);
  });

  test("firstDone with the attempt's deadline error: the request goes on to attempt 2", async () => {
    const h = harness();
    const s = sink();
    const exchange = new ScriptedExchange([204]);
    const ticket = h.executor.first(logical({ timeout: { attempt: 100 } }), exchange, s)!;
    const error = h.executor.firstDeadline(ticket);
    expect(error.message).toBe(
      'GET https://api.example.com/v1/items: attempt 1 exceeded timeout.attempt (100 ms)',
    );
    expect(h.executor.firstDone(ticket, { ok: false, error }, s)).toBe(false);
    await s.settled;
    expect(s.ended).toEqual([{ response: { status: 204, headers: {} } }]);
    expect(exchange.sent).toEqual([2]);
  });

  test('an admission that refuses: no ticket, the refusal ends in the sink', async () => {
    const h = harness({ policies: { breaker: { consecutiveFailures: 1, breakDuration: 1000 } } });
    await h.executor.run(logical({ retry: { attempts: 1 } }), new ScriptedExchange([503]));
    const s = sink();
    const ticket = h.executor.first(
      logical({ retry: { attempts: 1 } }),
      new ScriptedExchange([]),
      s,
    );
    expect(ticket).toBeUndefined();
    await s.settled;
    expect(s.ended).toEqual([{ error: expect.objectContaining({ code: 'STAUNCH_CIRCUIT_OPEN' }) }]);
  });
});
