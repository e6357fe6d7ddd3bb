/**
 * Every row of the retry table (README, "When is an outcome retried?"), run
 * through the executor with an in-memory exchange: for a replayable GET and
 * a POST without a key, how many attempts went out and why it stopped.
 */
import { describe, expect, test } from 'vitest';
import { coded, harness, logical, ScriptedExchange, type Step } from './support.js';

interface Row {
  readonly name: string;
  /** What every attempt meets. */
  readonly step: Step;
  /** Attempts sent for a GET, and for a POST without an idempotency key (of 3 allowed). */
  readonly get: number;
  readonly post: number;
  /** `giveUp`'s reason for the POST, when it says one. */
  readonly postGiveUp?: string;
}

const ROWS: Row[] = [
  { name: 'connection refused', step: { error: coded('ECONNREFUSED') }, get: 3, post: 3 },
  { name: 'DNS failure', step: { error: coded('ENOTFOUND') }, get: 3, post: 3 },
  { name: 'connect timeout', step: { error: coded('UND_ERR_CONNECT_TIMEOUT') }, get: 3, post: 3 },
  {
    name: 'TLS handshake timeout',
    step: { error: coded('ERR_TLS_HANDSHAKE_TIMEOUT') },
    get: 3,
    post: 3,
  },
  { name: '429', step: { status: 429, headers: { 'retry-after': '0' } }, get: 3, post: 3 },
  { name: '408', step: 408, get: 3, post: 3 },
  {
    name: '503 with Retry-After',
    step: { status: 503, headers: { 'retry-after': '1' } },
    get: 3,
    post: 3,
  },
  {
    name: 'x-should-retry: true on a 400',
    step: { status: 400, headers: { 'x-should-retry': 'true' } },
    get: 3,
    post: 3,
  },
  {
    name: 'x-should-retry: false on a 503',
    step: { status: 503, headers: { 'x-should-retry': 'false' } },
    get: 1,
    post: 1,
  },
  { name: '500', step: 500, get: 3, post: 1, postGiveUp: 'not-replayable' },
  { name: '502', step: 502, get: 3, post: 1, postGiveUp: 'not-replayable' },
  { name: '503 without Retry-After', step: 503, get: 3, post: 1, postGiveUp: 'not-replayable' },
  { name: '504', step: 504, get: 3, post: 1, postGiveUp: 'not-replayable' },
  { name: '529', step: 529, get: 3, post: 1, postGiveUp: 'not-replayable' },
  {
    name: 'reset after sending',
    step: { error: coded('ECONNRESET') },
    get: 3,
    post: 1,
    postGiveUp: 'not-replayable',
  },
  {
    name: 'a body timeout after sending',
    step: { error: coded('UND_ERR_SOCKET') },
    get: 3,
    post: 1,
    postGiveUp: 'not-replayable',
  },
  { name: '400', step: 400, get: 1, post: 1 },
  { name: '404', step: 404, get: 1, post: 1 },
  { name: '409', step: 409, get: 1, post: 1 },
  { name: 'a certificate error', step: { error: coded('CERT_HAS_EXPIRED') }, get: 1, post: 1 },
];

/** Runs `request` to its end; the response's status, or the error's code. */
async function settle(h: ReturnType<typeof harness>, exchange: ScriptedExchange, post: boolean) {
  const request = logical(post ? { method: 'POST', replayable: false } : {});
  try {
    const response = await h.executor.run(request, exchange);
    return { status: response.status };
  } catch (error) {
    return { error };
  }
}

describe('the retry table, through the executor', () => {
  for (const row of ROWS) {
    test(`${row.name}: ${row.get} attempt(s) for a GET, ${row.post} for a POST`, async () => {
      const steps = (n: number) => Array.from({ length: n }, () => row.step);
      const get = new ScriptedExchange(steps(3));
      const h = harness();
      await settle(h, get, false);
      expect(get.sent).toEqual([1, 2, 3].slice(0, row.get));

      const post = new ScriptedExchange(steps(3));
      const p = harness();
      await settle(p, post, true);
      expect(post.sent).toEqual([1, 2, 3].slice(0, row.post));
      const giveUps = p.of('giveUp').map((e) => e.reason);
      if (row.postGiveUp !== undefined) expect(giveUps).toEqual([row.postGiveUp]);
      else if (row.post === 3) expect(giveUps).toEqual(['attempts']);
      else expect(giveUps).toEqual([]);
    });
  }

  test('a retryable status after the last attempt is handed back, the earlier ones discarded', async () => {
    const exchange = new ScriptedExchange([503, 503, 503]);
    const h = harness();
    const response = await h.executor.run(logical(), exchange);
    expect(response.status).toBe(503);
    // The two intermediate responses were discarded; the last was handed over.
    expect(exchange.discarded.map((r) => r.status)).toEqual([503, 503]);
    expect(exchange.handedOver).toBe(0); // no caller signal: nothing to unlink
  });

  test('a body that cannot be sent again stops the retries after a failure', async () => {
    const exchange = new ScriptedExchange([{ error: coded('ECONNRESET') }, 200]);
    exchange.resendableAnswer = false;
    const h = harness();
    await expect(h.executor.run(logical(), exchange)).rejects.toMatchObject({
      code: 'STAUNCH_NETWORK',
    });
    expect(exchange.sent).toEqual([1]);
    expect(h.of('giveUp').map((e) => e.reason)).toEqual(['body-not-replayable']);
  });

  test('a network failure after the last attempt is a NetworkError naming the attempts', async () => {
    const exchange = new ScriptedExchange([
      { error: coded('ECONNRESET') },
      { error: coded('ECONNRESET') },
    ]);
    const h = harness();
    const request = logical({ retry: { attempts: 2 } });
    await expect(h.executor.run(request, exchange)).rejects.toThrow(
      'GET https://api.example.com/v1/items failed after 2 attempts: ECONNRESET (the request may have been sent)',
    );
  });
});
