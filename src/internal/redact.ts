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

/** Query parameter names that carry credentials (matched on the name's end). */
const SECRET_PARAM =
  /(?:^|[-_.])?(?:key|apikey|token|secret|password|passwd|pwd|signature|sig|credential|credentials|auth|session|sessionid|jwt)$/i;

export const REDACTED = '***';

/** Is this query parameter name credential-like (`api_key`, `access_token`, `X-Amz-Signature`…)? */
export function isSecretParam(name: string): boolean {
  return SECRET_PARAM.test(name);
}

/** The URL with userinfo and credential-like query values replaced by `***`. */
export function redactUrl(url: string): string {
  const hashAt = url.indexOf('#');
  const base = hashAt === -1 ? url : url.slice(0, hashAt);
  const queryAt = base.indexOf('?');
  let head = queryAt === -1 ? base : base.slice(0, queryAt);
  // userinfo: scheme://user:pass@host → scheme://***@host
  head = head.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/?#@]*@/i, `$1${REDACTED}@`);
  if (queryAt === -1) return head;
  const query = base
    .slice(queryAt + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      if (eq === -1) return pair;
      let name = pair.slice(0, eq);
      try {
        name = decodeURIComponent(name.replace(/\+/g, ' '));
      } catch {}
      return isSecretParam(name) ? `${pair.slice(0, eq)}=${REDACTED}` : pair;
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
      if (!SECRET_HEADERS.has(name.toLowerCase())) continue;
      addSecret(secrets, value);
      for (const part of value.split(/[\s;,]+/)) {
        addSecret(secrets, part);
        const eq = part.indexOf('=');
        if (eq !== -1) addSecret(secrets, part.slice(eq + 1));
      }
    }
  }
  const userinfo = /^[a-z][a-z0-9+.-]*:\/\/([^/?#@]*)@/i.exec(url)?.[1];
  if (userinfo) {
    addSecret(secrets, userinfo);
    for (const part of userinfo.split(':')) addSecret(secrets, part);
  }
  const queryAt = url.indexOf('?');
  if (queryAt !== -1) {
    const hashAt = url.indexOf('#', queryAt);
    const query = url.slice(queryAt + 1, hashAt === -1 ? undefined : hashAt);
    for (const pair of query.split('&')) {
      const eq = pair.indexOf('=');
      if (eq !== -1 && isSecretParam(pair.slice(0, eq))) addSecret(secrets, pair.slice(eq + 1));
    }
  }
  // Longest first, so that a secret containing another is replaced whole.
  return [...secrets].sort((a, b) => b.length - a.length);
}

/** Replaces every secret, and any URL userinfo, in a piece of text. */
export function redactText(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) if (out.includes(secret)) out = out.split(secret).join(REDACTED);
  return out.replace(/([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@]+@/gi, `$1${REDACTED}@`);
}

/**
 * Scrubs the secrets from `error`'s message and stack and from those of its
 * `cause` chain and aggregated errors, in place. Errors we cannot write to are
 * left alone.
 */
export function scrubError(error: unknown, secrets: readonly string[], depth = 0): void {
  if (depth > 8 || typeof error !== 'object' || error === null) return;
  const target = error as { message?: unknown; stack?: unknown; cause?: unknown; errors?: unknown };
  for (const field of ['message', 'stack'] as const) {
    const value = target[field];
    if (typeof value === 'string') {
      const clean = redactText(value, secrets);
      if (clean !== value) {
        try {
          Object.defineProperty(target, field, {
            value: clean,
            writable: true,
            configurable: true,
          });
        } catch {}
      }
    }
  }
  scrubError(target.cause, secrets, depth + 1);
  if (Array.isArray(target.errors))
    for (const e of target.errors) scrubError(e, secrets, depth + 1);
}
