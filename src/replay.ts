/**
 * What a deferred replay needs: when a replayable request gives up (budget
 * spent, circuit open, deadline…), the `giveUp` event carries a `replay`
 * description that can be queued (it is plain JSON) and sent again later with
 * the same idempotency key. Secrets are left out: secret headers, URL
 * userinfo and credential-like query parameters (`api_key`, `access_token`,
 * `X-Amz-Signature`…) would sit in a queue in clear. They are named in
 * `removed`, so the worker that replays puts them back from its own secret
 * store.
 */
import { SECRET_HEADERS, withoutSecrets } from './internal/redact.js';

/** What a replay description left out because it is secret. */
export interface ReplayRemoved {
  /** Secret headers removed (lower-case names: `authorization`, `x-api-key`…). */
  headers?: string[];
  /** Credential-like query parameters removed from the URL, by name (`api_key`…). */
  query?: string[];
  /** True when the URL's userinfo (`user:password@`) was removed. */
  userinfo?: true;
}

/** A request as it can be sent again later. Plain JSON. */
export interface ReplayRequest {
  method: string;
  /** The URL as sent, without userinfo, credential-like query parameters and fragment. */
  url: string;
  /** Request headers, lower-case names, secret headers removed. */
  headers: [string, string][];
  /** What was removed because it is secret, to be put back by the replayer; absent if nothing. */
  removed?: ReplayRemoved;
  /** The body, if any: text as is, bytes in base64. */
  body?: string;
  bodyEncoding?: 'utf8' | 'base64';
  /** The idempotency key the original attempts carried, if any. */
  idempotencyKey?: string;
}

function base64(bytes: Uint8Array): string {
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}

/**
 * Describes a request for replay, or `undefined` when its body cannot be
 * kept (a stream, a Blob, FormData not yet encoded: they are not read twice).
 */
export function describeReplay(
  method: string,
  url: string,
  headers: Iterable<readonly [string, string]>,
  body: unknown,
  keyHeader: string,
): ReplayRequest | undefined {
  const clean = withoutSecrets(url);
  const out: ReplayRequest = { method, url: clean.url, headers: [] };
  const removed: ReplayRemoved = {};
  const key = keyHeader.toLowerCase();
  for (const [name, value] of headers) {
    const lower = name.toLowerCase();
    if (SECRET_HEADERS.has(lower)) {
      removed.headers ??= [];
      if (!removed.headers.includes(lower)) removed.headers.push(lower);
      continue;
    }
    out.headers.push([lower, value]);
    if (lower === key) out.idempotencyKey = value;
  }
  if (clean.params.length > 0) removed.query = clean.params;
  if (clean.userinfo) removed.userinfo = true;
  if (removed.headers || removed.query || removed.userinfo) out.removed = removed;
  if (body === undefined || body === null) return out;
  if (typeof body === 'string') return { ...out, body, bodyEncoding: 'utf8' };
  if (typeof URLSearchParams !== 'undefined' && body instanceof URLSearchParams) {
    return { ...out, body: body.toString(), bodyEncoding: 'utf8' };
  }
  if (body instanceof ArrayBuffer)
    return { ...out, body: base64(new Uint8Array(body)), bodyEncoding: 'base64' };
  if (ArrayBuffer.isView(body)) {
    const view = new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
    return { ...out, body: base64(view), bodyEncoding: 'base64' };
  }
  return undefined;
}
