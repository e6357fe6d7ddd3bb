/**
 * staunch against a server that implements the Idempotency-Key draft
 * (draft-ietf-httpapi-idempotency-key-header): keys in flight answer 409, a
 * key reused with another payload 422, a finished key its stored response
 * (marked `Idempotent-Replayed: true`, as Stripe does). Built on
 * staunch/testing's server; the server counts the side effects.
 */
import type { ServerResponse } from 'node:http';
import { describe, expect, test } from 'vitest';
import { createFetch } from '../../src/index.js';
import { faultFetch, type SeenRequest, testClock } from '../../src/testing/index.js';
import { faultServer } from '../../src/testing/server.js';
import { closeAfterEach } from '../helpers/teardown.js';

const open = closeAfterEach();

interface Stored {
  fingerprint: string;
  response?: { status: number; body: string };
}

/**
 * The draft's server side: a charge per new key. `lose(n)`: the n-th request
 * is processed, then its response is lost (the socket destroyed).
 */
async function draftServer(lose: (index: number) => boolean = () => false) {
  const keys = new Map<string, Stored>();
  const state = { charges: 0 };
  const send = (res: ServerResponse, status: number, body: string, replayed = false) => {
    res.writeHead(status, replayed ? { 'idempotent-replayed': 'true' } : {});
    res.end(body);
  };
  const handler = (_req: unknown, res: ServerResponse, request: SeenRequest) => {
    const key = request.idempotencyKey;
    const fingerprint = new TextDecoder().decode(request.bytes);
    if (key === undefined) return send(res, 400, 'Idempotency-Key is required');
    const stored = keys.get(key);
    if (stored && stored.fingerprint !== fingerprint) return send(res, 422, 'key reused');
    if (stored && !stored.response) return send(res, 409, 'in flight');
    if (stored?.response) return send(res, stored.response.status, stored.response.body, true);
    keys.set(key, { fingerprint });
    state.charges++;
    const response = { status: 201, body: `charge ${state.charges}` };
    keys.get(key)!.response = response;
    if (lose(request.index)) res.socket?.destroy();
    else send(res, response.status, response.body);
  };
  const server = open.add(await faultServer({ handler }));
  return { server, state };
}

function client() {
  const clock = testClock();
  const transport = faultFetch({ fetch: globalThis.fetch });
  open.defer(clock.autoAdvance(() => transport.inFlight === 0));
  return createFetch({ fetch: transport, clock, random: () => 0.5 });
}

describe('the Idempotency-Key draft, server side', () => {
  test('a charge whose response was lost is retried with the same key and replayed, never charged twice', async () => {
    const { server, state } = await draftServer((i) => i === 0);
    const fetch = client();
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
});
