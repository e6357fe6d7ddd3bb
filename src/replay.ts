/**
 * What a deferred replay needs: when a replayable request gives up (budget
 * spent, circuit open, deadline…), the `giveUp` event carries a `replay`
 * description that can be queued (it is plain JSON) and sent again later with
 * the same idempotency key. Secret headers are left out: they would sit in a
 * queue in clear; the worker that replays adds its own credentials.
 */
import { SECRET_HEADERS } from './internal/redact.js';

/** A request as it can be sent again later. Plain JSON. */
export interface ReplayRequest {
  method: string;
  /** The URL as sent (credentials in the URL are the caller's to avoid). */
  url: string;
  /** Request headers, lower-case names, secret headers removed. */
  headers: [string, string][];
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
  const out: ReplayRequest = { method, url, headers: [] };
  const key = keyHeader.toLowerCase();
  for (const [name, value] of headers) {
    const lower = name.toLowerCase();
    if (SECRET_HEADERS.has(lower)) continue;
    out.headers.push([lower, value]);
    if (lower === key) out.idempotencyKey = value;
  }
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
