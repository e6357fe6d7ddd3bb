import { describe, expect, it } from 'vitest';
import { createAgent, createFetch, retryInterceptor } from '../../src/undici/index.js';

type Options = Parameters<typeof createAgent>[0];

describe('bad options throw at construction, naming the option and the value', () => {
  it.each<[string, unknown, ErrorConstructor, RegExp]>([
    ['timeouts.connect', { timeouts: { connect: -1 } }, RangeError, /timeouts\.connect .*got -1/],
    [
      'timeouts.headers',
      { timeouts: { headers: 1.5 } },
      RangeError,
      /timeouts\.headers .*got 1\.5/,
    ],
    ['timeouts.body', { timeouts: { body: '5s' } }, TypeError, /timeouts\.body .*got "5s"/],
    ['timeouts.idle', { timeouts: { idle: 5 } }, TypeError, /timeouts\.idle is not an option/],
    ['connections', { connections: 0 }, RangeError, /connections .*got 0/],
    ['connections', { connections: '8' }, TypeError, /connections .*got "8"/],
    ['keepAlive.idle', { keepAlive: { idle: 0 } }, RangeError, /keepAlive\.idle .*got 0/],
    [
      'keepAlive.max',
      { keepAlive: { idle: 5000, max: 1000 } },
      RangeError,
      /keepAlive\.max .*got 1000/,
    ],
    ['allowH2', { allowH2: 'yes' }, TypeError, /allowH2 must be a boolean, got "yes"/],
    ['tls', { tls: { insecure: true } }, TypeError, /tls\.insecure is not an option/],
    ['tls', { tls: 'strict' }, TypeError, /tls must be an object, got "strict"/],
    [
      'tls.rejectUnauthorized',
      { tls: { rejectUnauthorized: 'no' } },
      TypeError,
      /tls\.rejectUnauthorized must be a boolean, got "no"/,
    ],
    [
      'tls.rejectUnauthorized 0',
      { tls: { rejectUnauthorized: 0 } },
      TypeError,
      /tls\.rejectUnauthorized must be a boolean, got 0/,
    ],
    ['tls.ca', { tls: { ca: 42 } }, TypeError, /tls\.ca must be a PEM string or Buffer.*got 42/],
    ['tls.cert[1]', { tls: { cert: ['pem', {}] } }, TypeError, /tls\.cert\[1\] .*got an object/],
    [
      'tls.key[0].pem',
      { tls: { key: [{ pem: 5 }] } },
      TypeError,
      /tls\.key\[0\] must be .*\{ pem, passphrase \}, got an object/,
    ],
    ['tls.pfx', { tls: { pfx: true } }, TypeError, /tls\.pfx must be .*got true/],
    [
      'tls.passphrase',
      { tls: { passphrase: 1234 } },
      TypeError,
      /tls\.passphrase must be a string, got 1234/,
    ],
    [
      'tls.ciphers',
      { tls: { ciphers: ['A'] } },
      TypeError,
      /tls\.ciphers must be a string, got an array/,
    ],
    [
      'tls.servername',
      { tls: { servername: '' } },
      TypeError,
      /tls\.servername must be a host name, got ""/,
    ],
    [
      'tls.minVersion',
      { tls: { minVersion: 'TLSv1.4' } },
      TypeError,
      /tls\.minVersion must be one of TLSv1, TLSv1\.1, TLSv1\.2, TLSv1\.3, got "TLSv1\.4"/,
    ],
    [
      'tls.maxVersion below minVersion',
      { tls: { minVersion: 'TLSv1.3', maxVersion: 'TLSv1.2' } },
      RangeError,
      /tls\.maxVersion must be >= tls\.minVersion \(TLSv1\.3\), got "TLSv1\.2"/,
    ],
    [
      'tls.checkServerIdentity',
      { tls: { checkServerIdentity: true } },
      TypeError,
      /tls\.checkServerIdentity must be a function.*got true/,
    ],
    ['lookup', { lookup: 'dns' }, TypeError, /lookup must be a function.*got "dns"/],
    ['ssrf', { ssrf: 'on' }, TypeError, /ssrf must be a boolean or an object.*got "on"/],
    [
      'ssrf.allow',
      { ssrf: { allow: '10.0.0.0/8' } },
      TypeError,
      /ssrf\.allow must be an array.*got "10\.0\.0\.0\/8"/,
    ],
    [
      'ssrf.allow[1]',
      { ssrf: { allow: ['10.0.0.0/8', 'not a host!'] } },
      TypeError,
      /ssrf\.allow\[1\] .*got "not a host!"/,
    ],
    [
      'ssrf.deny[0]',
      { ssrf: { deny: ['10.0.0.0/40'] } },
      TypeError,
      /ssrf\.deny\[0\] .*got "10\.0\.0\.0\/40"/,
    ],
    [
      'ssrf.allow port',
      { ssrf: { allow: ['api.internal:99999'] } },
      TypeError,
      /ssrf\.allow\[0\] .*got "api\.internal:99999"/,
    ],
    ['ssrf.block', { ssrf: { block: [] } }, TypeError, /ssrf\.block is not an option/],
    ['retry.attempts', { retry: { attempts: 0 } }, RangeError, /retry\.attempts .*got 0/],
    ['on.retry', { on: { retry: 5 } }, TypeError, /on\.retry must be a function, got 5/],
    ['unknown key', { retyr: 3 }, TypeError, /createAgent options\.retyr is not an option/],
  ])('%s', (_name, options, type, message) => {
    const build = () => createAgent(options as Options);
    expect(build).toThrow(type);
    expect(build).toThrow(message);
  });

  it('createFetch: maxRedirects, and its own unknown keys', () => {
    expect(() => createFetch({ maxRedirects: -1 })).toThrow(RangeError);
    expect(() => createFetch({ maxRedirects: -1 })).toThrow(/maxRedirects .*got -1/);
    expect(() => createFetch({ fetch: globalThis.fetch } as never)).toThrow(
      /createFetch options\.fetch is not an option/,
    );
  });

  it('retryInterceptor: the core options only', () => {
    expect(() => retryInterceptor({ retry: 1.5 })).toThrow(/retry .*got 1\.5/);
    expect(() => retryInterceptor({ connections: 5 } as never)).toThrow(
      /retryInterceptor options\.connections is not an option/,
    );
    expect(() => retryInterceptor({ store: {} as never })).toThrow(/store must be a StateStore/);
  });

  it('accepts the documented defaults spelled out', async () => {
    const agent = createAgent({
      timeouts: { connect: 10_000, headers: 60_000, body: 300_000 },
      connections: 50,
      keepAlive: { idle: 4_000, margin: 2_000, max: 60_000 },
      allowH2: false,
      ssrf: false,
      retry: { attempts: 3 },
      tls: {
        ca: ['-----BEGIN CERTIFICATE-----', Buffer.from('pem')],
        key: [{ pem: 'k', passphrase: 'p' }],
        rejectUnauthorized: true,
        minVersion: 'TLSv1.2',
        maxVersion: 'TLSv1.3',
        servername: 'api.example.com',
        checkServerIdentity: () => undefined,
      },
    });
    await agent.close();
    const fetch = createFetch({
      ssrf: { allow: ['10.0.0.0/8', 'api.internal:8443', '[fd00::1]:443'] },
    });
    await fetch.dispatcher.close();
  });
});
