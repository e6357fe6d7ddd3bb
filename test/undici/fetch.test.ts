import { describe, expect, it } from 'vitest';
import { NetworkError, SsrfBlockedError } from '../../src/errors.js';
import { constantBackoff } from '../../src/retry/backoff.js';
import { CHANNELS, createFetch } from '../../src/undici/index.js';
import { httpServer, type TestServer } from '../helpers/server.js';
import { channelLog, closeAfterEach, rejection, tracker } from './support.js';

/** Closed after each test. */
const open = closeAfterEach();

async function serve(handler: Parameters<typeof httpServer>[0]): Promise<TestServer> {
  return open.add(await httpServer(handler));
}

function client(options: Parameters<typeof createFetch>[0] = {}) {
  const fetch = createFetch(options);
  open.add(fetch.dispatcher);
  return fetch;
}

const fast = { attempts: 3, backoff: constantBackoff(0) };

describe('createFetch from staunch/undici', () => {
  it('retries through the core adapter and resends the same body', async () => {
    const server = await serve((_req, res, i) => {
      res.writeHead(i === 0 ? 503 : 200);
      res.end(i === 0 ? 'busy' : 'stored');
    });
    const fetch = client({ retry: fast });
    const res = await fetch(`${server.url}/doc`, { method: 'PUT', body: '{"v":1}' });
    expect(await res.text()).toBe('stored');
    expect(server.received.map((r) => [r.method, r.body.toString()])).toEqual([
      ['PUT', '{"v":1}'],
      ['PUT', '{"v":1}'],
    ]);
  });

  it('never retries in two layers: attempts reach the server exactly `attempts` times', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(503);
      res.end();
    });
    const res = await client({ retry: fast })(server.url);
    expect(res.status).toBe(503);
    expect(server.received).toHaveLength(3);
  });

  it('takes the per-request fields on the init, and Request inputs', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(500);
      res.end();
    });
    const fetch = client({ retry: fast });
    const res = await fetch(new Request(`${server.url}/r`, { method: 'POST', body: 'b' }), {
      idempotencyKey: 'k-1',
      staunch: { retry: 2 },
    });
    expect(res.status).toBe(500);
    expect(server.received.map((r) => [r.headers['idempotency-key'], r.body.toString()])).toEqual([
      ['k-1', 'b'],
      ['k-1', 'b'],
    ]);
  });

  it('throws NetworkError with maybeSent for a POST cut off after it was sent', async () => {
    const server = await serve((req) => req.socket.destroy());
    const error = await rejection(
      client({ retry: fast })(server.url, { method: 'POST', body: 'x' }),
    );
    expect(error).toBeInstanceOf(NetworkError);
    expect((error as NetworkError).maybeSent).toBe(true);
    expect(server.received).toHaveLength(1);
  });

  it('throws the SsrfBlockedError itself, not a NetworkError around it', async () => {
    const server = await serve((_req, res) => res.end());
    const error = await rejection(client({ ssrf: true })(server.url));
    expect(error).toBeInstanceOf(SsrfBlockedError);
    expect(server.connections).toBe(0);
  });

  it('publishes on the diagnostics channels alongside the listeners', async () => {
    const server = await serve((_req, res, i) => {
      res.writeHead(i === 0 ? 503 : 200);
      res.end();
    });
    const t = tracker();
    const log = channelLog([CHANNELS.attemptStart, CHANNELS.retry]);
    try {
      await (await client({ retry: fast, on: t.on })(server.url)).text();
    } finally {
      log.stop();
    }
    expect(log.messages.map((m) => m.channel)).toEqual([
      'staunch:attempt:start',
      'staunch:retry',
      'staunch:attempt:start',
    ]);
    expect(log.messages[1]!.message).toBe(t.retries[0]);
  });
});
