/**
 * Redirects, followed by staunch hop by hop over a fetch that follows none:
 * - at most `max` hops; past that, an error (`ERR_TOO_MANY_REDIRECTS`, not retried);
 * - only to `http:` and `https:`; with the SSRF guard on, another scheme is
 *   refused with `SsrfBlockedError`, else the redirect response comes back;
 * - every hop connects through the same agent, so the SSRF guard checks the
 *   address of each hop;
 * - on a hop to another origin, the secret headers (`authorization`,
 *   `cookie`, `proxy-authorization`, `x-api-key`, `api-key`, `x-auth-token`)
 *   are dropped, guard or not (fetch drops only the first three), and a body
 *   is never carried: a 307/308 that would resend it to another origin is
 *   not followed (the redirect response comes back);
 * - 303, and 301/302 after a POST, become a GET without body (RFC 9110 §15.4).
 */
import { SsrfBlockedError } from '../errors.js';
import type { FetchLike } from '../fetch.js';
import { noop } from '../internal/clock.js';
import { DRAIN_LIMIT } from '../internal/limits.js';
import { SECRET_HEADERS } from '../internal/redact.js';

const REDIRECTS: ReadonlySet<number> = new Set([301, 302, 303, 307, 308]);

/** Headers that describe a body, dropped with it (Fetch §4.4 step 12). */
const BODY_HEADERS = [
  'content-type',
  'content-length',
  'content-encoding',
  'content-language',
  'content-location',
];

/** Bytes of a redirect response read so its connection can be reused; past that it is cancelled. */

/** Can this body be sent on a second hop? A stream has been read by the first. */
function reusable(body: unknown): boolean {
  return !(
    (typeof ReadableStream !== 'undefined' && body instanceof ReadableStream) ||
    (typeof body === 'object' &&
      body !== null &&
      (Symbol.asyncIterator in body || typeof (body as { pipe?: unknown }).pipe === 'function'))
  );
}

/** Reads a redirect response's body (bounded) so its connection goes back to the pool. */
async function release(response: Response): Promise<void> {
  const body = response.body;
  if (body === null || body.locked) return;
  if (Number(response.headers.get('content-length')) > DRAIN_LIMIT) {
    await body.cancel().catch(noop);
    return;
  }
  const reader = body.getReader();
  let read = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      read += value.byteLength;
      if (read > DRAIN_LIMIT) {
        await reader.cancel().catch(noop);
        return;
      }
    }
  } catch {
    await reader.cancel().catch(noop);
  }
}

function tooMany(max: number): TypeError {
  return Object.assign(new TypeError(`fetch failed: more than ${max} redirects`), {
    code: 'ERR_TOO_MANY_REDIRECTS',
  });
}

/**
 * A fetch that follows redirects over `send` (which must not follow them),
 * as the file comment says. `init.redirect` `'manual'` or `'error'` is handed
 * to `send` as is.
 */
export function followRedirects(send: FetchLike, max: number, guarded: boolean): FetchLike {
  return async (url, init) => {
    if (init.redirect === 'manual' || init.redirect === 'error') return send(url, init);
    let current = url;
    let hop: RequestInit = { ...init, redirect: 'manual' };
    for (let hops = 0; ; hops++) {
      const response = await send(current, hop);
      // Fetch's `redirected`: the response came at the end of at least one followed redirect.
      const final = (): Response => {
        if (hops > 0) Object.defineProperty(response, 'redirected', { value: true });
        return response;
      };
      if (!REDIRECTS.has(response.status)) return final();
      const location = response.headers.get('location');
      if (location === null) return final();
      let next: URL;
      let from: URL;
      try {
        from = new URL(current);
        next = new URL(location, from);
      } catch {
        return final();
      }
      if (next.protocol !== 'http:' && next.protocol !== 'https:') {
        if (!guarded) return final();
        await release(response);
        throw new SsrfBlockedError(
          `SSRF guard refused a redirect from ${from.origin} to a ${JSON.stringify(next.protocol)} URL`,
        );
      }
      if (hops >= max) {
        await release(response);
        throw tooMany(max);
      }
      const crossOrigin = next.origin !== from.origin;
      const method = (hop.method ?? 'GET').toUpperCase();
      const toGet =
        (response.status === 303 && method !== 'GET' && method !== 'HEAD') ||
        ((response.status === 301 || response.status === 302) && method === 'POST');
      const body = hop.body;
      if (!toGet && body !== undefined && body !== null && (crossOrigin || !reusable(body))) {
        return final();
      }
      await release(response);
      const headers = new Headers(hop.headers);
      if (toGet) for (const name of BODY_HEADERS) headers.delete(name);
      if (crossOrigin) for (const name of SECRET_HEADERS) headers.delete(name);
      hop = {
        ...hop,
        headers,
        method: toGet ? 'GET' : method,
        body: toGet ? null : (body ?? null),
      };
      current = next.href;
    }
  };
}
