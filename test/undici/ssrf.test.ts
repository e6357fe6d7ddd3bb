import type { LookupAddress } from 'node:dns';
import type { LookupFunction, Socket } from 'node:net';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { SsrfBlockedError } from '../../src/errors.js';
import { errorCode } from '../../src/retry/classify.js';
import { createAgent, createFetch } from '../../src/undici/index.js';
import { guardConnector, guardLookup, refusal, resolveSsrfOptions } from '../../src/undici/ssrf.js';
import { httpServer, type TestServer } from '../helpers/server.js';
import { closeAfterEach, rejection, tracker } from './support.js';

/** Closed after each test. */
const open = closeAfterEach();

async function serve(handler: Parameters<typeof httpServer>[0]): Promise<TestServer> {
  return open.add(await httpServer(handler));
}

function agent(options: Parameters<typeof createAgent>[0]) {
  return open.add(createAgent(options));
}

const ok = (_req: unknown, res: { end(body: string): void }) => res.end('reached');

describe('the SSRF guard blocks every non-public form, before connecting', () => {
  it.each([
    ['loopback', (p: number) => `http://127.0.0.1:${p}/`],
    ['short form 127.1', (p: number) => `http://127.1:${p}/`],
    ['octal 017700000001', (p: number) => `http://017700000001:${p}/`],
    ['hex 0x7f.1', (p: number) => `http://0x7f.1:${p}/`],
    ['decimal 2130706433', (p: number) => `http://2130706433:${p}/`],
    ['IPv4-mapped [::ffff:127.0.0.1]', (p: number) => `http://[::ffff:127.0.0.1]:${p}/`],
    ['IPv4-compatible [::127.0.0.1]', (p: number) => `http://[::127.0.0.1]:${p}/`],
    ['NAT64 [64:ff9b::127.0.0.1]', (p: number) => `http://[64:ff9b::127.0.0.1]:${p}/`],
    ['unspecified 0.0.0.0', (p: number) => `http://0.0.0.0:${p}/`],
    ['unspecified [::]', (p: number) => `http://[::]:${p}/`],
    ['IPv6 loopback [::1]', (p: number) => `http://[::1]:${p}/`],
    ['localhost, through lookup', (p: number) => `http://localhost:${p}/`],
  ])('%s', async (_name, url) => {
    const server = await serve(ok);
    const t = tracker();
    const error = await rejection(
      request(url(server.port), { dispatcher: agent({ ssrf: true, on: t.on }) }),
    );
    expect(error).toBeInstanceOf(SsrfBlockedError);
    expect((error as SsrfBlockedError).code).toBe('STAUNCH_SSRF_BLOCKED');
    // Not retried, and nothing reached the server.
    expect(t.retries).toEqual([]);
    expect(server.connections).toBe(0);
  });

  it.each([
    'http://169.254.169.254/latest/meta-data/',
    'http://10.0.0.1/',
    'http://172.16.5.4/',
    'http://192.168.1.1/',
    'http://100.64.0.1/',
    'http://[fc00::1]/',
    'http://[fd12:3456::1]/',
    'http://[fe80::1]/',
    'http://[::ffff:10.0.0.1]/',
    'http://[::ffff:169.254.169.254]/',
    'http://[64:ff9b::a9fe:a9fe]/',
    'http://224.0.0.1/',
    'http://255.255.255.255/',
  ])('%s', async (url) => {
    const error = await rejection(request(url, { dispatcher: agent({ ssrf: true }) }));
    expect(error).toBeInstanceOf(SsrfBlockedError);
  });

  it('refuses a name whose every address is private, and keeps the public ones of a mixed answer', async () => {
    const rules = resolveSsrfOptions(true, 'ssrf')!;
    const answers: LookupAddress[] = [
      { address: '10.1.2.3', family: 4 },
      { address: '93.184.216.34', family: 4 },
      { address: '::1', family: 6 },
    ];
    const inner: LookupFunction = (_host, options, callback) => {
      if ((options as { all?: boolean }).all) callback(null, answers);
      else callback(null, answers[0]!.address, 4);
    };
    const lookup = guardLookup(rules, inner);
    const all = await new Promise<unknown[]>((resolve, reject) =>
      lookup('mixed.test', { all: true }, (error, addresses) =>
        error ? reject(error) : resolve(addresses as unknown as unknown[]),
      ),
    );
    expect(all).toEqual([{ address: '93.184.216.34', family: 4 }]);
    const one = await new Promise<unknown>((resolve) =>
      lookup('mixed.test', {}, (error) => resolve(error)),
    );
    expect(one).toBeInstanceOf(SsrfBlockedError);
    expect(String(one)).toContain('10.1.2.3 (private)');
  });

  it('a rebinding answer through a lookup with { all: true } never reaches loopback', async () => {
    const server = await serve(ok);
    let calls = 0;
    // First answer public (unreachable here, so the guard is what is tested), then loopback.
    const rebinding: LookupFunction = (_host, options, callback) => {
      calls++;
      expect((options as { all?: boolean }).all).toBe(true);
      callback(null, [{ address: '127.0.0.1', family: 4 }]);
    };
    const error = await rejection(
      request(`http://rebind.test:${server.port}/`, {
        dispatcher: agent({ ssrf: true, lookup: rebinding }),
      }),
    );
    expect(error).toBeInstanceOf(SsrfBlockedError);
    expect(calls).toBe(1);
    expect(server.connections).toBe(0);
  });

  it('checks the address a socket actually connected to', async () => {
    const rules = resolveSsrfOptions(true, 'ssrf')!;
    let destroyed: unknown;
    const socket = {
      remoteAddress: '127.0.0.1',
      destroy(error: unknown) {
        destroyed = error;
      },
      prependOnceListener() {
        return this;
      },
    } as unknown as Socket;
    const connect = guardConnector(rules, (_options, callback) => {
      queueMicrotask(() => callback(null, socket));
      return socket as never;
    });
    const result = await new Promise<unknown>((resolve) =>
      connect({ hostname: 'public.test', protocol: 'http:', port: '80' }, (...args) =>
        resolve(args[0]),
      ),
    );
    expect(result).toBeInstanceOf(SsrfBlockedError);
    expect(destroyed).toBe(result);
  });
});

describe('allow and deny lists', () => {
  it('honours an allow-list entry: CIDR, host:port, IP:port', async () => {
    const server = await serve(ok);
    const other = await serve(ok);
    for (const allow of ['127.0.0.0/8', `localhost:${server.port}`, `127.0.0.1:${server.port}`]) {
      const dispatcher = agent({ ssrf: { allow: [allow] } });
      const host = allow.startsWith('localhost') ? 'localhost' : '127.0.0.1';
      const res = await request(`http://${host}:${server.port}/`, { dispatcher });
      expect(await res.body.text()).toBe('reached');
      if (allow !== '127.0.0.0/8') {
        // The port (and the host name) are part of the entry.
        const refused = await rejection(request(`http://${host}:${other.port}/`, { dispatcher }));
        expect(refused).toBeInstanceOf(SsrfBlockedError);
      }
    }
    expect(other.connections).toBe(0);
  });

  it('deny wins over allow, and can refuse a public address', () => {
    const rules = resolveSsrfOptions(
      { allow: ['127.0.0.0/8'], deny: ['127.0.0.2', '8.8.8.8/32'] },
      'ssrf',
    )!;
    expect(refusal(rules, '127.0.0.1', 80, '127.0.0.1')).toBeUndefined();
    expect(refusal(rules, '127.0.0.2', 80, '127.0.0.2')).toBe('deny list');
    expect(refusal(rules, 'dns.test', 53, '8.8.8.8')).toBe('deny list');
    expect(refusal(rules, 'example.test', 443, '93.184.216.34')).toBeUndefined();
    const hosts = resolveSsrfOptions({ allow: ['*.svc.local'] }, 'ssrf')!;
    expect(refusal(hosts, 'api.svc.local', 80, '10.0.0.5')).toBeUndefined();
    expect(refusal(hosts, 'svc.local.evil.test', 80, '10.0.0.5')).toBe('private');
  });
});

describe('redirects', () => {
  it('re-checks every hop: a redirect to loopback is refused', async () => {
    const target = await serve(ok);
    const origin = await serve((_req, res) => {
      res.writeHead(302, { location: `http://127.0.0.1:${target.port}/admin` });
      res.end();
    });
    const fetch = createFetch({ ssrf: { allow: [`127.0.0.1:${origin.port}`] } });
    open.add(fetch.dispatcher);
    const error = await rejection(fetch(`${origin.url}/start`));
    expect(error).toBeInstanceOf(SsrfBlockedError);
    expect(origin.received).toHaveLength(1);
    expect(target.connections).toBe(0);
  });

  it('refuses a redirect to a scheme other than http(s) when guarded', async () => {
    const origin = await serve((_req, res) => {
      res.writeHead(301, { location: 'file:///etc/passwd' });
      res.end();
    });
    const fetch = createFetch({ ssrf: { allow: ['127.0.0.1/32'] } });
    open.add(fetch.dispatcher);
    expect(await rejection(fetch(origin.url))).toBeInstanceOf(SsrfBlockedError);
    const unguarded = createFetch();
    open.add(unguarded.dispatcher);
    const res = await unguarded(origin.url);
    expect(res.status).toBe(301);
  });

  it('stops after maxRedirects hops, without retrying', async () => {
    const loop = await serve((_req, res) => {
      res.writeHead(302, { location: '/again' });
      res.end();
    });
    const fetch = createFetch({ maxRedirects: 3 });
    open.add(fetch.dispatcher);
    const error = await rejection(fetch(loop.url));
    expect(errorCode((error as Error).cause)).toBe('ERR_TOO_MANY_REDIRECTS');
    expect(loop.received).toHaveLength(4);
  });

  const secrets = {
    authorization: 'Bearer sk-live-123',
    cookie: 'session=abc',
    'proxy-authorization': 'Basic cHJveHk6cHc=',
    'x-api-key': 'key-123',
    'api-key': 'key-456',
    'x-trace': 'kept',
  };

  it('drops secret headers and the body on a cross-origin hop, even with the guard off', async () => {
    const other = await serve(ok);
    const origin = await serve((req, res) => {
      const to = req.url === '/see-other' ? 303 : 302;
      res.writeHead(to, { location: `http://127.0.0.1:${other.port}/landing` });
      res.end();
    });
    const fetch = createFetch();
    open.add(fetch.dispatcher);
    const res = await fetch(`${origin.url}/see-other`, {
      method: 'POST',
      headers: { ...secrets, 'content-type': 'application/json' },
      body: '{"card":"4242"}',
    });
    expect(await res.text()).toBe('reached');
    const landed = other.received[0]!;
    expect(landed.method).toBe('GET');
    expect(landed.body.toString()).toBe('');
    expect(landed.headers['x-trace']).toBe('kept');
    for (const name of [
      'authorization',
      'cookie',
      'proxy-authorization',
      'x-api-key',
      'api-key',
      'content-type',
    ]) {
      expect(landed.headers[name]).toBeUndefined();
    }
    // A plain GET redirected across origins: the secrets stay behind too.
    await (await fetch(`${origin.url}/get`, { headers: secrets })).text();
    expect(other.received[1]!.headers.authorization).toBeUndefined();
    expect(other.received[1]!.headers['x-api-key']).toBeUndefined();
  });

  it('keeps them on a same-origin hop', async () => {
    const server = await serve((req, res) => {
      if (req.url === '/start') {
        res.writeHead(307, { location: '/next' });
        res.end();
      } else res.end('reached');
    });
    const fetch = createFetch();
    open.add(fetch.dispatcher);
    const res = await fetch(`${server.url}/start`, {
      method: 'PUT',
      headers: secrets,
      body: 'v=1',
    });
    expect(await res.text()).toBe('reached');
    const next = server.received[1]!;
    expect([next.method, next.path, next.body.toString()]).toEqual(['PUT', '/next', 'v=1']);
    expect(next.headers.authorization).toBe(secrets.authorization);
    expect(next.headers['x-api-key']).toBe(secrets['x-api-key']);
  });

  it('does not follow a 307 that would carry a body to another origin', async () => {
    const other = await serve(ok);
    const origin = await serve((_req, res) => {
      res.writeHead(307, { location: `http://127.0.0.1:${other.port}/steal` });
      res.end();
    });
    const fetch = createFetch();
    open.add(fetch.dispatcher);
    const res = await fetch(origin.url, { method: 'POST', body: 'secret payload' });
    expect(res.status).toBe(307);
    expect(other.connections).toBe(0);
  });
});
