/** A sentinel secret, sent every way a secret travels, must surface nowhere. */
import { inspect } from 'node:util';
import { expect, test } from 'vitest';
import { createFetch, isStaunchError } from '../../src/index.js';
import { client } from '../helpers/harness.js';
import { closedPort, rawServer } from '../helpers/server.js';
import { closeAfterEach } from '../helpers/teardown.js';

const SECRET = 'SENTINEL-c2VjcmV0-7f3a9c';
const cleanup = closeAfterEach();

function everything(err: unknown, events: unknown[]): string {
  const parts: string[] = [
    inspect(err, { depth: 20 }),
    JSON.stringify(err),
    JSON.stringify(events),
  ];
  let e: unknown = err;
  for (let i = 0; i < 10 && e; i++) {
    const { message, stack } = e as Error;
    parts.push(String(message), String(stack));
    e = (e as Error).cause;
  }
  for (const ev of events) parts.push(inspect(ev, { depth: 10 }));
  return parts.join('\n');
}

function recorded(options: Parameters<typeof client>[0] = {}) {
  const events: unknown[] = [];
  const c = client({
    ...options,
    on: {
      attempt: (e) => events.push(e),
      retry: (e) => events.push(e),
      giveUp: (e) => events.push(e),
    },
  });
  cleanup.defer(c.stop);
  return { ...c, events };
}

const secretHeaders = {
  authorization: `Bearer ${SECRET}`,
  'proxy-authorization': `Basic ${SECRET}`,
  cookie: `session=${SECRET}; theme=dark`,
  'x-api-key': SECRET,
  'api-key': SECRET,
};

test('refused connection: nothing in errors, causes, inspect, JSON or events', async () => {
  const port = await closedPort();
  const { fetch, events } = recorded();
  const url = `http://127.0.0.1:${port}/v1/items?api_key=${SECRET}&token=${SECRET}&page=2`;
  const err = await fetch(url, { headers: secretHeaders }).catch((e: unknown) => e);
  expect(isStaunchError(err)).toBe(true);
  expect(events.length).toBeGreaterThan(0);
  const text = everything(err, events);
  expect(text).not.toContain(SECRET);
  expect(text).toContain('page=2');
  expect(text).toContain('api_key=***');
});

test('reset after sending, every secret header and a URL password', async () => {
  const server = await rawServer((socket) => socket.once('data', () => socket.destroy()));
  cleanup.add(server);
  const { fetch, events } = recorded();
  const err = await fetch(`${server.url}/x?access_token=${SECRET}`, {
    method: 'POST',
    body: 'payload',
    headers: secretHeaders,
  }).catch((e: unknown) => e);
  // The server did receive the secret: it was sent, just never echoed.
  expect(server.data[0]!.toString()).toContain(SECRET);
  const text = everything(err, events);
  expect(text).not.toContain(SECRET);
});

test('a message built by the transport itself is scrubbed (credentials in the URL)', async () => {
  const port = await closedPort();
  const events: unknown[] = [];
  // Node's fetch refuses URLs with credentials, quoting the URL in its message: the
  // caller's mistake, thrown as the runtime's TypeError, scrubbed.
  const fetch = createFetch({ on: { giveUp: (e) => events.push(e) } });
  const err = await fetch(`http://user:${SECRET}@127.0.0.1:${port}/`).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(TypeError);
  expect(isStaunchError(err)).toBe(false);
  expect((err as Error).message).toContain('http://***@127.0.0.1');
  const text = everything(err, events);
  expect(text).not.toContain(SECRET);
});

test('a transport that quotes the header in its error is scrubbed too', async () => {
  const events: unknown[] = [];
  const fetch = createFetch({
    retry: 2,
    random: () => 0,
    fetch: async (_url, init) => {
      const auth = new Headers(init.headers).get('authorization');
      throw new TypeError(`upstream rejected ${auth}`, {
        cause: Object.assign(new Error(`socket hang up (${auth})`), { code: 'ECONNRESET' }),
      });
    },
    on: { retry: (e) => events.push(e), giveUp: (e) => events.push(e) },
  });
  const err = await fetch('http://127.0.0.1:9/', {
    headers: { Authorization: `Bearer ${SECRET}` },
  }).catch((e: unknown) => e);
  expect((err as Error).cause).toBeInstanceOf(TypeError);
  const text = everything(err, events);
  expect(text).not.toContain(SECRET);
  expect(text).toContain('ECONNRESET');
});
