import { inspect } from 'node:util';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { NetworkError } from '../../src/errors.js';
import {
  collectSecrets,
  isSecretParam,
  REDACTED,
  redactText,
  redactUrl,
  scrubError,
  withoutSecrets,
} from '../../src/internal/redact.js';

describe('redactUrl: userinfo', () => {
  it.each([
    ['https://user:pass@example.com/p', 'https://***@example.com/p'],
    ['https://user@example.com/', 'https://***@example.com/'],
    ['https://:pass@example.com/', 'https://***@example.com/'],
    ['https://user:p@ss@example.com/x', 'https://***@example.com/x'], // raw @ in the password
    ['https://user:p%40ss@example.com/x', 'https://***@example.com/x'],
    ['HTTPS://U:P@EXAMPLE.COM', 'HTTPS://***@EXAMPLE.COM'],
    ['http://u:p@127.0.0.1:8080/a?b=1', 'http://***@127.0.0.1:8080/a?b=1'],
    ['//user:pass@example.com/x', '//***@example.com/x'], // scheme-relative
    ['redis://default:hunter2@cache:6379', 'redis://***@cache:6379'],
  ])('%s → %s', (url, expected) => {
    expect(redactUrl(url)).toBe(expected);
  });

  it.each([
    'https://example.com/a@b',
    'https://example.com/?x=a@b',
    'https://example.com/path/user@host',
    'mailto:someone@example.com',
  ])('an @ outside the authority is not userinfo: %s', (url) => {
    expect(redactUrl(url)).toBe(url);
  });
});

describe('redactUrl: query parameters', () => {
  it.each([
    'api_key',
    'apikey',
    'apiKey',
    'API_KEY',
    'api-key',
    'key',
    'token',
    'access_token',
    'refresh_token',
    'id_token',
    'accessToken',
    'auth_token',
    'secret',
    'client_secret',
    'password',
    'passwd',
    'pwd',
    'signature',
    'sig',
    'X-Amz-Signature',
    'X-Amz-Credential',
    'X-Amz-Security-Token',
    'X-Goog-Signature',
    'jwt',
    'auth',
    'session',
    'sessionid',
    'session_id',
    'private_key',
    'code',
    'CODE',
    'client_assertion',
    'X-Goog-Credential',
  ])('%s is redacted, its neighbours untouched', (name) => {
    expect(isSecretParam(name)).toBe(true);
    expect(redactUrl(`https://h.example/p?page=2&${name}=SENTINEL-7f3a9c&sort=asc`)).toBe(
      `https://h.example/p?page=2&${name}=***&sort=asc`,
    );
  });

  it.each([
    ['api%5Fkey', 'api%5Fkey=***'],
    ['access%5Ftoken', 'access%5Ftoken=***'],
    ['X%2DAmz%2DSignature', 'X%2DAmz%2DSignature=***'],
    ['%74oken', '%74oken=***'],
    ['api+key', 'api+key=***'],
  ])('URL-encoded name %s is decoded before matching, kept as written', (name, expected) => {
    expect(redactUrl(`https://h.example/?${name}=SENTINEL-7f3a9c`)).toBe(
      `https://h.example/?${expected}`,
    );
  });

  it('a value containing = is redacted whole', () => {
    expect(redactUrl('https://h.example/?token=abc=def==&page=2')).toBe(
      'https://h.example/?token=***&page=2',
    );
  });

  it('every occurrence of a repeated secret parameter is redacted', () => {
    expect(redactUrl('https://h.example/?key=a1b2&key=c3d4&q=1')).toBe(
      'https://h.example/?key=***&key=***&q=1',
    );
  });

  it('an empty secret value has nothing to hide and stays as it is', () => {
    expect(redactUrl('https://h.example/?token=&page=2')).toBe('https://h.example/?token=&page=2');
  });

  it('a malformed percent-encoding in a name does not throw', () => {
    expect(redactUrl('https://h.example/?%E0%A4%A=1&token%=x')).toBe(
      'https://h.example/?%E0%A4%A=1&token%=x',
    );
    expect(redactUrl('https://h.example/?%zztoken=x')).toBe('https://h.example/?%zztoken=***');
  });

  it('non-secret parameters survive byte for byte', () => {
    const url =
      'https://api.example.com/v1/items?q=caf%C3%A9+au+lait&sort=-created_at' +
      '&filter%5Bname%5D=a%2Fb&page=2&flag&empty=&max_tokens=100&keyword=x&model=gpt-4o' +
      '&redirect=https%3A%2F%2Fx.example%2F%3Fa%3Db&tokens=3&author=me';
    expect(redactUrl(url)).toBe(url);
  });

  it('relative references and non-URLs', () => {
    expect(redactUrl('')).toBe('');
    expect(redactUrl('not a url')).toBe('not a url');
    expect(redactUrl('/path?token=abc&x=1')).toBe('/path?token=***&x=1');
    expect(redactUrl('?api_key=abc')).toBe('?api_key=***');
  });
});

describe('redactUrl: fragment', () => {
  it('drops the fragment, which is never sent and may hold a token (OAuth implicit flow)', () => {
    expect(redactUrl('https://h.example/cb#access_token=SENTINEL-7f3a9c&state=1')).toBe(
      'https://h.example/cb',
    );
    expect(redactUrl('https://h.example/p?x=1#section')).toBe('https://h.example/p?x=1');
    expect(redactUrl('https://h.example/p?token=abc#x')).toBe('https://h.example/p?token=***');
    expect(redactUrl('#only')).toBe('');
  });
});

describe('redactUrl properties', () => {
  const anyString = fc.oneof(
    fc.string(),
    fc.string({ unit: 'binary' }),
    fc.string({
      unit: fc.constantFrom('a', '%', '=', '&', '?', '#', '@', ':', '/', '+', 'k', 'ey'),
    }),
    fc.webUrl({
      withQueryParameters: true,
      withFragments: true,
      authoritySettings: { withUserInfo: true, withPort: true },
    }),
  );

  it('never throws and is idempotent on arbitrary strings', () => {
    fc.assert(
      fc.property(anyString, (s) => {
        const once = redactUrl(s);
        return typeof once === 'string' && redactUrl(once) === once;
      }),
    );
  });

  it('never lengthens a URL without credentials: it is kept byte for byte (fragment aside)', () => {
    const name = fc.stringMatching(/^[A-Za-z0-9_.~%-]{1,12}$/).filter((n) => {
      let decoded = n;
      try {
        decoded = decodeURIComponent(n);
      } catch {}
      return !isSecretParam(n) && !isSecretParam(decoded);
    });
    const value = fc.stringMatching(/^[A-Za-z0-9_.~%+=:@/?-]{0,16}$/);
    const query = fc
      .array(fc.tuple(name, fc.option(value, { nil: undefined })), { maxLength: 6 })
      .map((pairs) => pairs.map(([n, v]) => (v === undefined ? n : `${n}=${v}`)).join('&'));
    fc.assert(
      fc.property(
        fc.webUrl({ withQueryParameters: false, withFragments: false }),
        fc.option(query, { nil: undefined }),
        fc.option(fc.webFragments(), { nil: undefined }),
        (base, q, fragment) => {
          const withoutFragment = q === undefined ? base : `${base}?${q}`;
          const url = fragment === undefined ? withoutFragment : `${withoutFragment}#${fragment}`;
          const out = redactUrl(url);
          return out === withoutFragment && out.length <= url.length;
        },
      ),
    );
  });

  it('never lets the value of a credential-like parameter through', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('api_key', 'token', 'access_token', 'X-Amz-Signature', 'password', 'sig'),
        fc.stringMatching(/^[^&#]{1,30}$/),
        (name, secret) =>
          redactUrl(`https://h.example/p?a=1&${name}=${secret}&b=2`) ===
          `https://h.example/p?a=1&${name}=***&b=2`,
      ),
    );
  });
});

const SENTINEL = 'SENTINEL-7f3a9c';
const AUTH = `${SENTINEL}-bearer`;
const COOKIE_A = `${SENTINEL}-cookie-a`;
const COOKIE_B = `${SENTINEL}-cookie-b`;
const API_KEY = `${SENTINEL}-apikey`;
const PASSWORD = `${SENTINEL}-password`;
const QUERY = `${SENTINEL}-query`;
const URL_WITH_SECRETS = `https://user:${PASSWORD}@api.example.com/v1/charge?token=${QUERY}&page=2`;
const HEADERS: [string, string][] = [
  ['Authorization', `Bearer ${AUTH}`],
  ['Cookie', `a=${COOKIE_A}; b=${COOKIE_B}`],
  ['x-api-key', API_KEY],
  ['Accept', 'application/json'],
];

describe('collectSecrets', () => {
  it('collects each secret header value, its tokens, URL userinfo and credential params', () => {
    const secrets = collectSecrets(URL_WITH_SECRETS, HEADERS);
    for (const secret of [AUTH, `Bearer ${AUTH}`, COOKIE_A, COOKIE_B, API_KEY, PASSWORD, QUERY]) {
      expect(secrets).toContain(secret);
    }
    expect(secrets).not.toContain('application/json');
    expect(secrets.some((s) => s.includes('page'))).toBe(false);
  });

  it('takes the credentials of an Authorization header, not its scheme or plain parameters', () => {
    const sigv4 =
      'AWS4-HMAC-SHA256 Credential=AKIAEXAMPLE/20260101/us-east-1/s3/aws4_request, ' +
      'SignedHeaders=host;x-amz-date, Signature=fe5f80f77d5fa3beca038a248ff027d0445342fe2855ddc963176630326f1024';
    const secrets = collectSecrets('https://h.example/', [
      ['Authorization', `Bearer ${AUTH}`],
      ['Proxy-Authorization', sigv4],
    ]);
    expect(secrets).toContain(AUTH);
    expect(secrets).toContain('AKIAEXAMPLE/20260101/us-east-1/s3/aws4_request');
    expect(secrets).toContain('fe5f80f77d5fa3beca038a248ff027d0445342fe2855ddc963176630326f1024');
    for (const word of ['Bearer', 'AWS4-HMAC-SHA256', 'host', 'x-amz-date']) {
      expect(secrets).not.toContain(word);
    }
    const message = 'getaddrinfo ENOTFOUND localhost: Bearer token rejected for host x-amz-date';
    expect(redactText(message, secrets)).toBe(message);
  });

  it('takes a Basic token68 with its padding, and quoted Digest values', () => {
    const basic = collectSecrets('https://h.example/', [['Authorization', 'Basic dXNlcjpwYXNz==']]);
    expect(basic).toContain('dXNlcjpwYXNz==');
    const digest = collectSecrets('https://h.example/', [
      ['Authorization', 'Digest username="Mufasa", response="6629fae49393a05397450978507c4ef1"'],
    ]);
    expect(digest).toContain('6629fae49393a05397450978507c4ef1');
    expect(digest).toContain('Mufasa');
    expect(digest).not.toContain('Digest');
  });

  it('takes cookie values, not cookie names', () => {
    const secrets = collectSecrets('https://h.example/', [['Cookie', `session=${COOKIE_A}`]]);
    expect(secrets).toContain(COOKIE_A);
    expect(secrets).not.toContain('session');
  });

  it('reads a Headers object (lower-cased names)', () => {
    const secrets = collectSecrets('https://h.example/', new Headers(HEADERS));
    for (const secret of [AUTH, COOKIE_A, COOKIE_B, API_KEY]) expect(secrets).toContain(secret);
  });

  it.each([
    'authorization',
    'Proxy-Authorization',
    'cookie',
    'X-API-Key',
    'api-key',
    'x-auth-token',
  ])('%s is a secret header', (name) => {
    expect(collectSecrets('https://h.example/', [[name, API_KEY]])).toContain(API_KEY);
  });

  it('orders secrets longest first, so a secret containing another is replaced whole', () => {
    const secrets = collectSecrets('https://h.example/', [['x-api-key', 'abcd abcdefgh']]);
    const lengths = secrets.map((s) => s.length);
    expect(lengths).toEqual([...lengths].sort((a, b) => b - a));
    expect(redactText('key abcdefgh', secrets)).toBe(`key ${REDACTED}`);
  });

  it('ignores values too short to redact safely', () => {
    expect(collectSecrets('https://a:b@h.example/?key=xy', [['x-api-key', 'abc']])).toEqual([]);
  });

  it('collects a password containing a raw @ whole', () => {
    expect(collectSecrets(`https://user:${SENTINEL}@x@h.example/`, undefined)).toContain(
      `${SENTINEL}@x`,
    );
  });

  it('collects both the encoded and decoded forms of a query secret', () => {
    const secrets = collectSecrets('https://h.example/?token=abc%2Bdef%2F1', undefined);
    expect(secrets).toContain('abc%2Bdef%2F1');
    expect(secrets).toContain('abc+def/1');
  });

  it('matches URL-encoded parameter names as redactUrl does', () => {
    expect(collectSecrets(`https://h.example/?api%5Fkey=${QUERY}`, undefined)).toContain(QUERY);
    expect(collectSecrets(`https://h.example/?api+key=${QUERY}`, undefined)).toContain(QUERY);
  });

  it('does not look for secrets in the fragment', () => {
    expect(collectSecrets('https://h.example/#token=abcdef', undefined)).toEqual([]);
  });
});

describe('redactText', () => {
  it('replaces every occurrence of every secret, and any URL userinfo', () => {
    const secrets = collectSecrets(URL_WITH_SECRETS, HEADERS);
    const text = `GET ${URL_WITH_SECRETS} failed; Authorization: Bearer ${AUTH}; again ${AUTH}; see ftp://anon:x@files.example/`;
    const clean = redactText(text, secrets);
    expect(clean).not.toContain(SENTINEL);
    expect(clean).toContain('https://***@api.example.com/v1/charge?token=***&page=2');
    expect(clean).toContain('ftp://***@files.example/');
  });

  it('replaces a userinfo whose password holds a raw @ whole', () => {
    expect(redactText(`see https://u:${SENTINEL}@x@h.example/ now`, [])).toBe(
      'see https://***@h.example/ now',
    );
  });

  it('leaves text without secrets alone', () => {
    const text = 'connect ECONNREFUSED 127.0.0.1:443 (user@example.com)';
    expect(redactText(text, ['SENTINEL'])).toBe(text);
  });
});

describe('scrubError: no secret survives in any rendering', () => {
  const renderings = (error: unknown): string[] => [
    inspect(error, { depth: 10 }),
    inspect(error, { depth: 10, showHidden: true }),
    JSON.stringify(error) ?? '',
    String(error),
    ...chain(error).flatMap((e) => [String(e.message), String(e.stack), JSON.stringify(e) ?? '']),
  ];
  const chain = (error: unknown, out: { message?: unknown; stack?: unknown }[] = []) => {
    if (typeof error !== 'object' || error === null || out.length > 20) return out;
    const e = error as { message?: unknown; stack?: unknown; cause?: unknown; errors?: unknown };
    out.push(e);
    chain(e.cause, out);
    if (Array.isArray(e.errors)) for (const inner of e.errors) chain(inner, out);
    return out;
  };

  function leakyError(): NetworkError {
    const reset = Object.assign(
      new Error(`read ECONNRESET while sending cookie a=${COOKIE_A}; b=${COOKIE_B}`, {
        cause: `a string cause holding ${API_KEY}`,
      }),
      {
        code: 'ECONNRESET',
        input: URL_WITH_SECRETS,
        url: URL_WITH_SECRETS,
        request: { headers: { authorization: `Bearer ${AUTH}`, 'x-api-key': API_KEY } },
        history: [URL_WITH_SECRETS],
      },
    );
    const aggregate = new AggregateError(
      [new Error(`connect to ${URL_WITH_SECRETS}`), reset],
      `all attempts failed with x-api-key ${API_KEY}`,
    );
    const transport = new TypeError(
      `fetch failed: ${URL_WITH_SECRETS} (Authorization: Bearer ${AUTH})`,
      { cause: aggregate },
    );
    return new NetworkError(`POST ${redactUrl(URL_WITH_SECRETS)} failed`, true, {
      cause: transport,
      method: 'POST',
      url: redactUrl(URL_WITH_SECRETS),
    });
  }

  it('the fixture does leak before scrubbing (so the test can fail)', () => {
    const error = leakyError();
    for (const secret of [AUTH, COOKIE_A, COOKIE_B, API_KEY, PASSWORD, QUERY]) {
      expect(renderings(error).join('\n')).toContain(secret);
    }
  });

  it('after scrubbing: message, stack, cause chain, inspect and JSON are clean', () => {
    const error = leakyError();
    scrubError(error, collectSecrets(URL_WITH_SECRETS, HEADERS));
    for (const text of renderings(error)) expect(text).not.toContain(SENTINEL);
    // What is not secret is still there to debug with.
    const inspected = inspect(error, { depth: 10 });
    expect(inspected).toContain('ECONNRESET');
    expect(inspected).toContain('api.example.com/v1/charge');
    expect(inspected).toContain('page=2');
  });

  it('each secret source on its own is enough to be scrubbed', () => {
    const cases: [string, [string, string][], string][] = [
      ['https://h.example/', [['Authorization', `Bearer ${AUTH}`]], AUTH],
      ['https://h.example/', [['Cookie', `a=${COOKIE_A}; b=${COOKIE_B}`]], COOKIE_B],
      ['https://h.example/', [['x-api-key', API_KEY]], API_KEY],
      [`https://user:${PASSWORD}@h.example/`, [], PASSWORD],
      [`https://h.example/?api_key=${QUERY}`, [], QUERY],
    ];
    for (const [url, headers, secret] of cases) {
      const error = new Error(`failed with ${secret} inside`, { cause: new Error(secret) });
      scrubError(error, collectSecrets(url, headers));
      for (const text of renderings(error)) expect(text, secret).not.toContain(secret);
    }
  });

  it('a real transport error (Node fetch, unparsable URL holding secrets) is scrubbed', async () => {
    const url = `http://user:${PASSWORD}@[bad/?token=${QUERY}`;
    const error = await fetch(url, { headers: { authorization: `Bearer ${AUTH}` } }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(inspect(error, { depth: 10 })).toContain(QUERY); // leaks as Node made it
    scrubError(error, collectSecrets(url, [['authorization', `Bearer ${AUTH}`]]));
    for (const text of renderings(error)) expect(text).not.toContain(SENTINEL);
  });

  it('survives cycles, frozen errors and non-objects', () => {
    const loop = new Error(`loop ${API_KEY}`);
    (loop as { cause?: unknown }).cause = loop;
    const aggregate = new AggregateError([], `agg ${API_KEY}`);
    aggregate.errors.push(aggregate, loop);
    const secrets = [API_KEY];
    expect(() => scrubError(aggregate, secrets)).not.toThrow();
    expect(loop.message).toBe('loop ***');
    expect(aggregate.message).toBe('agg ***');

    const frozen = Object.freeze(new Error(`frozen ${API_KEY}`));
    expect(() => scrubError(frozen, secrets)).not.toThrow();
    for (const value of [undefined, null, 'text', 42]) {
      expect(() => scrubError(value, secrets)).not.toThrow();
    }
  });

  it('does not walk into class instances it does not own (sockets, requests)', () => {
    class Socket {
      host = `h-${API_KEY}`;
    }
    const socket = new Socket();
    const error = Object.assign(new Error('x'), { socket });
    scrubError(error, [API_KEY]);
    expect(socket.host).toBe(`h-${API_KEY}`);
  });
});

describe('scrubError keeps the shape of what it rewrites', () => {
  it('keeps enumerability and leaves clean strings untouched', () => {
    const details = { message: `m ${SENTINEL}-x`, other: 'clean' };
    const error = Object.assign(new Error(`e ${SENTINEL}-x`), { details });
    scrubError(error, [`${SENTINEL}-x`]);
    expect(Object.keys(details)).toEqual(['message', 'other']);
    expect(details).toEqual({ message: 'm ***', other: 'clean' });
    expect(Object.keys(error)).toEqual(['details']);
    expect(error.message).toBe('e ***');
    expect(error.stack?.startsWith('Error: e ***\n')).toBe(true);
  });
});

describe('issue 10: OAuth code and presigned-URL signatures in free text', () => {
  const presigned =
    'https://bucket.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA-SENTINEL%2F20260101%2Fus-east-1&X-Amz-Signature=SENTINEL-sig-aws&X-Amz-Expires=60';
  it.each([
    ['a presigned S3 URL quoted in a message', `redirect to ${presigned} refused`],
    [
      'a GCS signed URL',
      'GET https://storage.googleapis.com/b/o?X-Goog-Signature=SENTINEL-goog&X-Goog-Date=20260101',
    ],
    ['an Azure SAS', 'failed: https://a.blob.core.windows.net/c/b?sv=2024&sig=SENTINEL-sas%3D'],
    ['an OAuth callback', "location: 'https://app.example/cb?code=SENTINEL-oauth&state=xyz'"],
    ['a bare signature', 'POST /hook?signature=SENTINEL-hmac: 401'],
  ])('%s: the values go, the names and the other parameters stay', (_name, text) => {
    const out = redactText(text, []);
    expect(out).not.toContain('SENTINEL');
    expect(out).toMatch(/(?:Signature|Credential|sig|code|signature)=\*\*\*/);
    expect(redactText(out, [])).toBe(out); // idempotent
  });

  it('keeps non-secret parameters byte for byte, and codes that are not OAuth codes', () => {
    const text = 'GET https://h.example/p?X-Amz-Expires=60&zipcode=75001&errorCode=E42&state=xyz';
    expect(redactText(text, [])).toBe(text);
    expect(redactUrl('https://h.example/?zipcode=75001&code=abc')).toBe(
      'https://h.example/?zipcode=75001&code=***',
    );
  });

  it('scrubError applies it to messages the transport built about another URL', () => {
    const error = new Error(`too many redirects, last ${presigned}`);
    scrubError(error, []);
    expect(error.message).not.toContain('SENTINEL');
    expect(error.stack).not.toContain('SENTINEL');
  });
});

describe('withoutSecrets: a URL as a replay stores it', () => {
  it.each([
    [
      'https://h.example/v1?page=2&api_key=K1&access_token=T1',
      'https://h.example/v1?page=2',
      ['api_key', 'access_token'],
      false,
    ],
    ['https://u:p@h.example/v1?x=1', 'https://h.example/v1?x=1', [], true],
    ['https://h.example/v1?token=a&token=b', 'https://h.example/v1', ['token'], false],
    ['https://h.example/v1?api%5Fkey=K1#frag', 'https://h.example/v1', ['api_key'], false],
    ['https://h.example/v1?q=1&flag', 'https://h.example/v1?q=1&flag', [], false],
    ['https://h.example/v1', 'https://h.example/v1', [], false],
  ])('%s → %s', (url, clean, params, userinfo) => {
    expect(withoutSecrets(url)).toEqual({ url: clean, params, userinfo });
  });
});
