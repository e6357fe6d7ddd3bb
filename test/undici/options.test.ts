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
      keepAlive: { idle: 4_000, margin: 1_000, max: 60_000 },
      allowH2: false,
      ssrf: false,
      retry: { attempts: 3 },
    });
    await agent.close();
    const fetch = createFetch({
      ssrf: { allow: ['10.0.0.0/8', 'api.internal:8443', '[fd00::1]:443'] },
    });
    await fetch.dispatcher.close();
  });
});
