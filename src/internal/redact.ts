/**
 * No secret leaves staunch: URLs in errors and events are redacted, and the
 * secret values of a request are scrubbed from every error message and stack
 * in a cause chain, including messages the transport built itself.
 */

/** Request headers whose values are secrets. */
export const SECRET_HEADERS: ReadonlySet<string> = new Set([
  'authorization',
  'proxy-authorization',
  'cookie',
  'x-api-key',
  'api-key',
  'x-auth-token',
]);

/**
 * Query parameter names that carry credentials, matched on the name's end with
 * no word boundary (`accessToken`, `X-Amz-Signature`, `X-Amz-Credential`,
 * `X-Goog-Signature`, `sig`, `client_assertion`), so it errs on the side of
 * redacting (`monkey=` is redacted too). The OAuth authorization `code`
 * (RFC 6749 §4.1.2) is matched whole only: `zipcode` or `errorCode` are not
 * credentials.
 */
const SECRET_PARAM =
  /(?:key|token|secret|password|passwd|pwd|signature|sig|credentials?|auth|session(?:[-_]?id)?|jwt|assertion)$|^code$/i;

export const REDACTED = '***';

/** Is this query parameter name credential-like (`api_key`, `access_token`, `X-Amz-Signature`…)? */
export function isSecretParam(name: string): boolean {
  return SECRET_PARAM.test(name);
}

/**
 * The userinfo of an absolute or scheme-relative URL: everything up to the
 * *last* `@` before the path, as the WHATWG URL parser reads it (a raw `@` in a
 * password belongs to the password).
 */
const USERINFO = /^((?:[a-z][a-z0-9+.-]*:)?\/\/)([^/?#]+)@/i;

/** A query parameter name as the server reads it (`api%5Fkey` → `api_key`). */
function paramName(raw: string): string {
  try {
    return decodeURIComponent(raw.replace(/\+/g, ' '));
  } catch {
    return raw;
  }
}

/**
 * The URL with userinfo and the non-empty values of credential-like query
 * parameters replaced by `***`. The fragment is dropped: it is never sent, and
 * OAuth implicit flows put tokens in it. Everything else is kept byte for byte.
 */
export function redactUrl(url: string): string {
  const hashAt = url.indexOf('#');
  const base = hashAt === -1 ? url : url.slice(0, hashAt);
  const queryAt = base.indexOf('?');
  let head = queryAt === -1 ? base : base.slice(0, queryAt);
  // userinfo: scheme://user:pass@host → scheme://***@host
  head = head.replace(USERINFO, `$1${REDACTED}@`);
  if (queryAt === -1) return head;
  const query = base
    .slice(queryAt + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      if (eq === -1 || eq === pair.length - 1) return pair;
      return isSecretParam(paramName(pair.slice(0, eq)))
        ? `${pair.slice(0, eq)}=${REDACTED}`
        : pair;
    })
    .join('&');
  return `${head}?${query}`;
}

const MIN_SECRET = 4;

function addSecret(into: Set<string>, value: string): void {
  if (value.length < MIN_SECRET) return;
  into.add(value);
  let decoded = value;
  try {
    decoded = decodeURIComponent(value);
  } catch {}
  if (decoded !== value && decoded.length >= MIN_SECRET) into.add(decoded);
  else if (encodeURIComponent(value) !== value) into.add(encodeURIComponent(value));
}

/**
 * A secret header value, whole, and the parts of it that could show up alone in
 * a message. Only the credentials are taken, not the words around them: an
 * `Authorization` scheme (`Bearer`, `AWS4-HMAC-SHA256`) or a cookie name would
 * otherwise be scrubbed out of every message ("localhost" → "local***").
 */
function addHeaderSecrets(into: Set<string>, name: string, value: string): void {
  addSecret(into, value);
  let parts: string[];
  if (name === 'cookie') {
    parts = value.split(/;\s*/);
  } else if (name.endsWith('authorization')) {
    // RFC 9110 §11.4: credentials = auth-scheme [ 1*SP ( token68 / #auth-param ) ].
    parts = value.trim().split(/[\s,]+/);
    if (parts.length > 1) parts.shift();
  } else {
    parts = value.split(/[\s;,]+/);
  }
  for (const part of parts) {
    const eq = part.indexOf('=');
    const param = eq > 0 ? part.slice(eq + 1).replace(/^"(.*)"$/, '$1') : '';
    // A token68 ends in "=" padding (`dXNlcjpwYXNz==`): it is a credential whole.
    if (/^=*$/.test(param)) addSecret(into, part);
    else addSecret(into, param);
  }
}

/**
 * The secret strings of one request: secret header values (whole, and each
 * token of them: `Bearer sk-…` yields `sk-…`), URL userinfo, and the values of
 * credential-like query parameters.
 */
export function collectSecrets(
  url: string,
  headers: Iterable<readonly [string, string]> | undefined,
): string[] {
  const secrets = new Set<string>();
  if (headers) {
    for (const [name, value] of headers) {
      const lower = name.toLowerCase();
      if (SECRET_HEADERS.has(lower)) addHeaderSecrets(secrets, lower, value);
    }
  }
  const hashAt = url.indexOf('#');
  const base = hashAt === -1 ? url : url.slice(0, hashAt);
  const userinfo = USERINFO.exec(base)?.[2];
  if (userinfo) {
    addSecret(secrets, userinfo);
    const colon = userinfo.indexOf(':');
    if (colon !== -1) {
      addSecret(secrets, userinfo.slice(0, colon));
      addSecret(secrets, userinfo.slice(colon + 1));
    }
  }
  const queryAt = base.indexOf('?');
  if (queryAt !== -1) {
    for (const pair of base.slice(queryAt + 1).split('&')) {
      const eq = pair.indexOf('=');
      if (eq !== -1 && isSecretParam(paramName(pair.slice(0, eq)))) {
        addSecret(secrets, pair.slice(eq + 1));
      }
    }
  }
  // Longest first, so that a secret containing another is replaced whole.
  return [...secrets].sort((a, b) => b.length - a.length);
}

/**
 * A query parameter in free text: after `?` or `&`, up to the next separator,
 * whitespace or quote (a message may quote a URL that is not the request's,
 * such as a presigned redirect target, whose secrets were never collected).
 */
const TEXT_PARAM = /([?&])([^=&\s#"'<>?]+)=([^&\s#"'<>]+)/g;

/**
 * Replaces every secret, any URL userinfo, and the values of credential-like
 * query parameters, in a piece of text.
 */
export function redactText(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) if (out.includes(secret)) out = out.split(secret).join(REDACTED);
  // As in USERINFO, up to the last @ before the path (a password may hold a raw @).
  out = out.replace(/([a-z][a-z0-9+.-]*:\/\/)[^\s/?#]+@/gi, `$1${REDACTED}@`);
  if (!out.includes('=')) return out;
  return out.replace(TEXT_PARAM, (pair, separator: string, name: string, value: string) =>
    value !== REDACTED && isSecretParam(paramName(name)) ? `${separator}${name}=${REDACTED}` : pair,
  );
}

/**
 * `url` without what is secret in it, for a description that will be stored
 * (a replay): userinfo and credential-like query parameters are removed
 * whole, and named, so that whoever sends it again can put them back from its
 * own secret store. The fragment is dropped (it is never sent).
 */
export function withoutSecrets(url: string): { url: string; params: string[]; userinfo: boolean } {
  const hashAt = url.indexOf('#');
  const base = hashAt === -1 ? url : url.slice(0, hashAt);
  const queryAt = base.indexOf('?');
  const head = queryAt === -1 ? base : base.slice(0, queryAt);
  const stripped = head.replace(USERINFO, '$1');
  const params: string[] = [];
  if (queryAt === -1) return { url: stripped, params, userinfo: stripped !== head };
  const kept = base
    .slice(queryAt + 1)
    .split('&')
    .filter((pair) => {
      const eq = pair.indexOf('=');
      const name = paramName(eq === -1 ? pair : pair.slice(0, eq));
      if (eq === -1 || !isSecretParam(name)) return true;
      if (!params.includes(name)) params.push(name);
      return false;
    });
  const query = kept.join('&');
  return {
    url: query === '' && params.length > 0 ? stripped : `${stripped}?${query}`,
    params,
    userinfo: stripped !== head,
  };
}

/** Bounds on the walk of `scrubError`: nesting depth and objects visited in all. */
const MAX_DEPTH = 12;
const MAX_VISITS = 256;

/**
 * Scrubs the secrets, in place, from every string an error carries: `message`,
 * `stack`, a string `cause`, and any other own property (Node's
 * `ERR_INVALID_URL` keeps the URL in `input`), then from its `cause` chain, its
 * aggregated `errors` and the plain objects and arrays hanging off them
 * (`util.inspect` and `JSON.stringify` show those too). Instances of other
 * classes (sockets, requests) are not walked into: they are not ours to
 * rewrite. Properties we cannot write to are left alone.
 */
export function scrubError(error: unknown, secrets: readonly string[]): void {
  scrub(error, secrets, 0, new Set());
}

/**
 * `error`, scrubbed of `secrets` (in place, as {@link scrubError}), for use as
 * the `cause` of an error staunch throws: a policy's refusal after a failed
 * attempt carries that attempt's error, and it must not carry a secret the
 * transport quoted in it.
 */
export function scrubbedCause<E>(error: E, secrets: readonly string[]): E {
  scrubError(error, secrets);
  return error;
}

function scrub(
  target: unknown,
  secrets: readonly string[],
  depth: number,
  seen: Set<object>,
): void {
  if (typeof target !== 'object' || target === null) return;
  if (depth > MAX_DEPTH || seen.size >= MAX_VISITS || seen.has(target)) return;
  seen.add(target);
  try {
    // `message` and `stack` may be accessors (V8 installs `stack` lazily in some versions).
    for (const field of ['message', 'stack'] as const) {
      const value = (target as Record<string, unknown>)[field];
      if (typeof value !== 'string') continue;
      const clean = redactText(value, secrets);
      const own = Object.getOwnPropertyDescriptor(target, field);
      if (clean !== value) define(target, field, clean, own?.enumerable === true);
    }
    for (const key of Reflect.ownKeys(target)) {
      if (key === 'message' || key === 'stack') continue;
      const descriptor = Object.getOwnPropertyDescriptor(target, key);
      if (descriptor === undefined || !('value' in descriptor)) continue;
      const value: unknown = descriptor.value;
      if (typeof value === 'string') {
        const clean = redactText(value, secrets);
        if (clean !== value) define(target, key, clean, descriptor.enumerable === true);
      } else if (walkable(value)) {
        scrub(value, secrets, depth + 1, seen);
      }
    }
  } catch {
    // A revoked proxy or a throwing getter: nothing more can be done here.
  }
}

function define(target: object, key: string | symbol, value: string, enumerable: boolean): void {
  try {
    Object.defineProperty(target, key, { value, writable: true, configurable: true, enumerable });
  } catch {
    try {
      (target as Record<string | symbol, unknown>)[key] = value;
    } catch {}
  }
}

/** Errors (of any realm), plain objects and arrays: the shapes errors carry their details in. */
function walkable(value: unknown): value is object {
  if (typeof value !== 'object' || value === null) return false;
  if (Array.isArray(value) || value instanceof Error) return true;
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto === Object.prototype || proto === null) return true;
  return Object.prototype.toString.call(value) === '[object Error]';
}
