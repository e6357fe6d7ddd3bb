/**
 * staunch against a server that implements the Idempotency-Key draft
 * (draft-ietf-httpapi-idempotency-key-header): keys in flight answer 409, a
 * key reused with another payload 422, a finished key its stored response
 * (marked `Idempotent-Replayed: true`, as Stripe does). Built on
 * staunch/testing's server; the server counts the side effects.
 */
import type { ServerResponse } from 'node:http';
import { describe, expect, test } from 'vitest';
import { createFetch, IdempotencyKeyMismatchError, type StaunchOptions } from '../../src/index.js';
import { KEY_IN_FLIGHT } from '../../src/retry/classify.js';
import { faultFetch, type SeenRequest, testClock } from '../../src/testing/index.js';
import { faultServer } from '../../src/testing/server.js';
import { closeAfterEach } from '../helpers/teardown.js';

const open = closeAfterEach();

interface Stored {
  fingerprint: string;
  response?: { status: number; body: string };
}

interface DraftOptions {
  /** The n-th request is processed, then its response is lost (the socket destroyed). */
  lose?: (index: number) => boolean;
  /** A new key's request stays in flight until a 409 has answered another one with it. */
  hold?: boolean;
  /** Headers sent with each 409. */
  conflict?: Record<string, string>;
}

/** The draft's server side: a charge per new key. A request without a key gets 409s ({@link DraftOptions}). */
async function draftServer({ lose = () => false, hold = false, conflict = {} }: DraftOptions = {}) {
  const keys = new Map<string, Stored>();
  const state = { charges: 0, conflicts: 0 };
  let release: (() => void) | undefined;
  const send = (res: ServerResponse, status: number, body: string, headers = {}) => {
    res.writeHead(status, headers);
    res.end(body);
  };
  const handler = (_req: unknown, res: ServerResponse, request: SeenRequest) => {
    const key = request.idempotencyKey;
    const fingerprint = new TextDecoder().decode(request.bytes);
    if (key === undefined) return send(res, 409, 'conflict, no key involved');
    const stored = keys.get(key);
    if (stored && stored.fingerprint !== fingerprint) return send(res, 422, 'key reused');
    if (stored && !stored.response) {
      state.conflicts++;
      send(res, 409, 'in flight', conflict);
      release?.();
      release = undefined;
      return;
    }
    const replayed = { 'idempotent-replayed': 'true' };
    if (stored?.response) return send(res, stored.response.status, stored.response.body, replayed);
    keys.set(key, { fingerprint });
    state.charges++;
    const response = { status: 201, body: `charge ${state.charges}` };
    const finish = () => {
      keys.get(key)!.response = response;
      if (lose(request.index)) res.socket?.destroy();
      else send(res, response.status, response.body);
    };
    if (hold) release = finish;
    else finish();
  };
  const server = open.add(await faultServer({ handler }));
  return { server, state };
}

function client(options: Omit<StaunchOptions, 'fetch' | 'clock' | 'random'> = {}) {
  const clock = testClock();
  const transport = faultFetch({ fetch: globalThis.fetch });
  open.defer(clock.autoAdvance(() => transport.inFlight === 0));
  return createFetch({ ...options, fetch: transport, clock, random: () => 0.5 });
}

/** Every event of the client, in order, as `[name, event]`. */
function recorder() {
  const events: [string, Record<string, unknown>][] = [];
  const on = (name: string) => (event: object) => events.push([name, { ...event }]);
  const names = ['attempt', 'retry', 'giveUp', 'wait', 'end', 'breakerStateChange'] as const;
  const listeners = Object.fromEntries(names.map((name) => [name, on(name)]));
  const named = (name: string) => events.filter(([n]) => n === name).map(([, event]) => event);
  return { listeners, events, named };
}

/** Two calls of one keyed POST at once: one meets the other in flight. */
async function racePair(url: string, fetch: ReturnType<typeof client>) {
  const init = { method: 'POST', body: '{"amount":7}', idempotencyKey: 'order-7' };
  const responses = await Promise.all([fetch(url, init), fetch(url, init)]);
  const texts = await Promise.all(responses.map((res) => res.text()));
  return { responses, texts };
}

describe('the Idempotency-Key draft, server side', () => {
  test('a charge whose response was lost is retried with the same key and replayed, never charged twice', async () => {
    const { server, state } = await draftServer({ lose: (i) => i === 0 });
    const { listeners, named } = recorder();
    const fetch = client({ on: listeners });
    const res = await fetch(`${server.url}/charges`, {
      method: 'POST',
      body: '{"amount":42}',
      idempotencyKey: 'order-42',
    });
    expect([res.status, await res.text()]).toEqual([201, 'charge 1']);
    expect(res.headers.get('idempotent-replayed')).toBe('true');
    expect(state.charges).toBe(1);
    expect(server.seen.idempotencyKeys).toEqual(['order-42', 'order-42']);
    expect(new Set(server.seen.bodies)).toEqual(new Set(['{"amount":42}']));
    // The replay is said on the attempt that got it, and on the end.
    const attempts = named('attempt');
    expect(attempts.map((event) => event.replayed)).toEqual([undefined, true]);
    expect(named('end')).toMatchObject([{ status: 201, replayed: true }]);
  });

  test('a key reused with another payload: the 422 comes back as it is, at once, and charges nothing', async () => {
    const { server, state } = await draftServer();
    const fetch = client();
    const first = await fetch(server.url, { method: 'POST', body: 'a', idempotencyKey: 'k' });
    const second = await fetch(server.url, { method: 'POST', body: 'b', idempotencyKey: 'k' });
    expect([first.status, second.status, await second.text()]).toEqual([201, 422, 'key reused']);
    expect(server.seen.attempts).toBe(2);
    expect(state.charges).toBe(1);
  });

  test("with idempotency.mismatch: 'throw', a keyed 422 is thrown as IdempotencyKeyMismatchError, never retried", async () => {
    const { server, state } = await draftServer();
    const { listeners, named } = recorder();
    const fetch = client({
      on: listeners,
      idempotency: { mismatch: 'throw' },
      retry: { statuses: [422, 500] },
    });
    const url = `${server.url}/charges?api_key=SENTINEL-SECRET`;
    await fetch(url, { method: 'POST', body: 'a', idempotencyKey: 'k' });
    const error = await fetch(url, { method: 'POST', body: 'b', idempotencyKey: 'k' }).then(
      () => undefined,
      (reason: unknown) => reason,
    );
    expect(error).toBeInstanceOf(IdempotencyKeyMismatchError);
    const mismatch = error as IdempotencyKeyMismatchError;
    expect(mismatch).toMatchObject({ code: 'STAUNCH_IDEMPOTENCY_KEY_MISMATCH', status: 422 });
    expect(mismatch.attempts).toBe(1);
    expect(mismatch.message).toMatch(/another payload/);
    expect(JSON.stringify(mismatch.toJSON()) + mismatch.message).not.toContain('SENTINEL');
    // The 422 was in retry.statuses: still sent once, and nothing was charged twice.
    expect([server.seen.attempts, state.charges]).toEqual([2, 1]);
    expect(named('retry')).toEqual([]);
    expect(named('end')[1]).toMatchObject({ code: 'STAUNCH_IDEMPOTENCY_KEY_MISMATCH' });
  });

  test('idempotency.mismatch takes only return or throw', () => {
    const make = (mismatch: unknown) => () =>
      createFetch({ idempotency: { mismatch } } as unknown as StaunchOptions);
    expect(make('yes')).toThrow(TypeError);
    expect(make('yes')).toThrow(/idempotency\.mismatch must be 'return' or 'throw', got/);
    expect(make('return')).not.toThrow();
  });

  test('a keyed POST that meets its key in flight (409) waits, is sent again with the key and gets the stored response', async () => {
    const { server, state } = await draftServer({ hold: true });
    const { listeners, named } = recorder();
    const fetch = client({
      on: listeners,
      budget: { ratio: 0, minPerSecond: 0 },
      breaker: { consecutiveFailures: 1 },
    });
    const { responses, texts } = await racePair(server.url, fetch);
    expect(responses.map((res) => res.status)).toEqual([201, 201]);
    expect(texts).toEqual(['charge 1', 'charge 1']);
    const replayed = responses.map((res) => res.headers.get('idempotent-replayed'));
    expect(replayed.sort()).toEqual(['true', null].sort());
    expect([state.charges, state.conflicts, server.seen.attempts]).toEqual([1, 1, 3]);
    expect(server.seen.idempotencyKeys).toEqual(['order-7', 'order-7', 'order-7']);
    // Pacing, not failure: a budget that pays for no retry let it through, no circuit opened.
    expect(named('retry')).toMatchObject([
      { status: 409, kind: KEY_IN_FLIGHT, reason: 'status', delaySource: 'backoff' },
    ]);
    expect(named('giveUp')).toEqual([]);
    expect(named('wait').map((event) => event.reason)).toEqual(['backoff']);
    expect(named('breakerStateChange')).toEqual([]);
    expect(named('end').map((event) => event.status)).toEqual([201, 201]);
    // Only the call that waited got the stored response: only it is said replayed.
    expect(named('end').filter((event) => event.replayed === true)).toHaveLength(1);
  });

  test("a 409's Retry-After paces the keyed retry", async () => {
    const { server, state } = await draftServer({ hold: true, conflict: { 'retry-after': '2' } });
    const { listeners, named } = recorder();
    const fetch = client({ on: listeners, budget: { ratio: 0, minPerSecond: 0 } });
    const { texts } = await racePair(server.url, fetch);
    expect(texts).toEqual(['charge 1', 'charge 1']);
    expect(state.charges).toBe(1);
    const [retry] = named('retry');
    expect(retry).toMatchObject({ status: 409, delaySource: 'retry-after' });
    expect(retry!.delay).toBeGreaterThanOrEqual(2000);
    expect(retry!.delay).toBeLessThanOrEqual(2400);
  });

  test('a 409 to a request without a key is an ordinary 4xx: returned at once, not retried', async () => {
    const { server, state } = await draftServer();
    const { listeners, named } = recorder();
    const fetch = client({ on: listeners });
    const res = await fetch(server.url, { method: 'PUT', body: 'x' });
    expect([res.status, await res.text()]).toEqual([409, 'conflict, no key involved']);
    expect([server.seen.attempts, state.charges]).toEqual([1, 0]);
    expect(named('retry')).toEqual([]);
    expect(named('attempt')).toEqual([expect.not.objectContaining({ kind: KEY_IN_FLIGHT })]);
  });
});
