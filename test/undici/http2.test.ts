import { createSecureServer, type Http2Session } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { constantBackoff } from '../../src/retry/backoff.js';
import { createAgent, createFetch } from '../../src/undici/index.js';
import { selfSignedCertificate } from './support.js';

interface Seen {
  path: string;
  httpVersion: string;
}

let cert: string;
let url: string;
let close: () => Promise<void>;
const seen: Seen[] = [];
const sessions = new Set<Http2Session>();
let sessionCount = 0;

beforeAll(async () => {
  const pair = selfSignedCertificate();
  cert = pair.cert;
  // HTTP/2 only: a client that did not negotiate h2 fails to connect.
  const server = createSecureServer({ key: pair.key, cert: pair.cert, allowHTTP1: false });
  server.on('session', (session) => {
    sessionCount++;
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
  });
  server.on('request', (req, res) => {
    const path = req.url ?? '';
    seen.push({ path, httpVersion: req.httpVersion });
    const attempts = seen.filter((s) => s.path === path).length;
    if (path.startsWith('/flaky') && attempts === 1) {
      res.writeHead(503, { 'content-type': 'text/plain' });
      res.end('busy');
      return;
    }
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(`h2 ${req.httpVersion} ${path}`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  close = () =>
    new Promise<void>((resolve) => {
      for (const s of sessions) s.destroy();
      server.close(() => resolve());
    });
});

afterAll(async () => {
  await close();
});

describe('HTTP/2 (allowH2) against node:http2 with a self-signed certificate', () => {
  it('createAgent negotiates h2 and retries over one session', async () => {
    const before = sessionCount;
    const dispatcher = createAgent({
      allowH2: true,
      tls: { ca: cert },
      retry: { attempts: 3, backoff: constantBackoff(0) },
    });
    try {
      const res = await request(`${url}/flaky-agent`, { dispatcher });
      expect(res.statusCode).toBe(200);
      expect(await res.body.text()).toBe('h2 2.0 /flaky-agent');
    } finally {
      await dispatcher.close();
    }
    expect(seen.filter((s) => s.path === '/flaky-agent')).toEqual([
      { path: '/flaky-agent', httpVersion: '2.0' },
      { path: '/flaky-agent', httpVersion: '2.0' },
    ]);
    expect(sessionCount - before).toBe(1);
  });

  it('createFetch negotiates h2 too, sequential requests reuse the session', async () => {
    const before = sessionCount;
    const fetch = createFetch({
      allowH2: true,
      tls: { ca: cert },
      retry: { attempts: 3, backoff: constantBackoff(0) },
    });
    try {
      for (const path of ['/a', '/b', '/flaky-fetch']) {
        expect(await (await fetch(`${url}${path}`)).text()).toBe(`h2 2.0 ${path}`);
      }
    } finally {
      await fetch.dispatcher.close();
    }
    expect(sessionCount - before).toBe(1);
  });

  it('without allowH2 the same server cannot be reached (it speaks only h2)', async () => {
    const dispatcher = createAgent({ tls: { ca: cert }, retry: 1 });
    try {
      await expect(request(`${url}/h1`, { dispatcher })).rejects.toThrow();
    } finally {
      await dispatcher.close();
    }
    expect(seen.some((s) => s.path === '/h1')).toBe(false);
  });
});
