/** The default policy key: a URL's origin, read without `new URL` when it can be. */
import { describe, expect, it } from 'vitest';
import { cachedOriginKey, originKey } from '../../src/policy/policies.js';

const cases: [string, string][] = [
  ['http://A.com/x', 'http://a.com'],
  ['HTTPS://u:p@Host:443/p?q#f', 'https://host:443'],
  ['http://a@b@c/d', 'http://b@c'],
  ['http://h?x', 'http://h'],
  ['http://h#x', 'http://h'],
  ['http://h', 'http://h'],
  ['http://h/a@b', 'http://h'],
  ['http://[::1]:80/x', 'http://[::1]:80'],
  ['ftp+x.y-z://H/', 'ftp+x.y-z://h'],
  // Not `scheme://`: `new URL` decides, and an unparseable URL is its own key.
  ['http:/x', 'http://x'],
  ['1http://x/', '1http://x/'],
  ['h_ttp://x/', 'h_ttp://x/'],
  ['', ''],
];

describe('originKey', () => {
  it('lowercases scheme and host, drops the userinfo, keeps the port as written', () => {
    for (const [url, key] of cases) expect(originKey({ method: 'GET', url }), url).toBe(key);
  });

  it('cached per client: the same answers, twice, and one key for every request of an origin', () => {
    const key = cachedOriginKey();
    for (const [url, expected] of cases) {
      expect(key({ method: 'GET', url }), url).toBe(expected);
      expect(key({ method: 'GET', url }), url).toBe(expected);
    }
    const a = key({ method: 'GET', url: 'https://api.example.com/v1/a' });
    const b = key({ method: 'POST', url: 'https://api.example.com/v1/b?x=1' });
    expect(a).toBe('https://api.example.com');
    expect(b).toBe(a);
  });

  it("given the URL's origin apart (the undici adapters), answers what the URL alone gives", () => {
    const key = cachedOriginKey();
    const plain = cachedOriginKey();
    const urls: [string, string][] = [
      ['http://A.example:8080', '/x'],
      ['http://A.example:8080', '/y?q'],
      ['http://a.example:8080', '/x'],
      ['http://A.example:80', '/x'],
      ['http://A.example:8080', '/z'],
    ];
    for (const [origin, path] of urls) {
      const url = `${origin}${path}`;
      expect(key({ method: 'GET', url, origin } as never), url).toBe(plain({ method: 'GET', url }));
    }
  });

  it('stays bounded: past its size it starts over and still answers right', () => {
    const key = cachedOriginKey();
    for (let i = 0; i < 1_000; i++) {
      expect(key({ method: 'GET', url: `http://h${i}.example/p` })).toBe(`http://h${i}.example`);
    }
    expect(key({ method: 'GET', url: 'http://h0.example/q' })).toBe('http://h0.example');
  });
});

describe('cachedOriginKey, one origin after another', () => {
  it('tells an origin from a longer one that starts with it', () => {
    const key = cachedOriginKey();
    const sequence: [string, string][] = [
      ['http://h/a', 'http://h'],
      ['http://h', 'http://h'],
      ['http://hx/a', 'http://hx'],
      ['http://h:80/a', 'http://h:80'],
      ['http://h?q', 'http://h'],
      ['http://h#f', 'http://h'],
      ['HTTP://H/a', 'http://h'],
      ['http://h.example/a', 'http://h.example'],
      ['http://h/b', 'http://h'],
    ];
    for (const [url, expected] of sequence) expect(key({ method: 'GET', url }), url).toBe(expected);
  });
});
