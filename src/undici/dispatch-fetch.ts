/**
 * A WHATWG fetch for one hop, on an undici dispatcher's `dispatch`: what the
 * `createFetch` of `staunch/undici` hands the core fetch adapter as its
 * transport, instead of `undici.fetch`. The core adapter does the rest
 * (retries, replayable bodies, `Request` inputs, the `staunch` field,
 * deadlines, the caller's signal), redirect.ts follows redirects.
 *
 * undici's fetch runs the whole Fetch standard for each call (a `Request`
 * object, its signal and a `FinalizationRegistry` entry, the fetch
 * controller, header lists, CORS and cache steps a server does not need):
 * over `dispatch`, a request costs what `undici.request` costs, plus the
 * `Response` the caller gets. What it keeps of fetch: the method
 * normalization and refusals (a forbidden method, a GET or HEAD with a body,
 * credentials in the URL, a bad port, a stream body without `duplex`), the
 * default `accept`, `accept-encoding` and `user-agent` headers (as Node's
 * fetch sends them), the decoding of gzip, deflate and br bodies, the
 * `content-type` fetch gives a string,
 * `URLSearchParams`, `Blob` or `FormData` body, `redirect: 'error'`, and a
 * `TypeError('fetch failed')` with the cause for a network failure. Other
 * schemes (`data:`, `blob:`) go to the global fetch.
 */
import type { Dispatcher } from 'undici';
import type { FetchLike } from '../fetch.js';
import { DEFAULT_METHODS } from '../options.js';
import { upperMethod } from '../request-options.js';
import { markInvalid } from '../retry/classify.js';
import { FetchHandler, fetchFailed } from './response.js';
import { afterNextPoll } from './stale.js';

/** Fetch §2.2.3: methods normalized to upper case; the rest are sent as written. */
const NORMALIZED: ReadonlySet<string> = new Set([
  'DELETE',
  'GET',
  'HEAD',
  'OPTIONS',
  'POST',
  'PUT',
  'PATCH',
]);
const FORBIDDEN_METHODS: ReadonlySet<string> = new Set(['CONNECT', 'TRACE', 'TRACK']);
/** RFC 9110 §9.2.2: the idempotent methods (and QUERY); any other goes after the next poll. */
const IDEMPOTENT: ReadonlySet<string> = new Set(DEFAULT_METHODS);
const REDIRECTS: ReadonlySet<number> = new Set([301, 302, 303, 307, 308]);

/** Fetch's "bad port" list (Fetch §2.9). */
const BAD_PORTS: ReadonlySet<string> = new Set(
  (
    '1 7 9 11 13 15 17 19 20 21 22 23 25 37 42 43 53 69 77 79 87 95 101 102 103 104 109 110 111 113 ' +
    '115 117 119 123 135 137 139 143 161 179 389 427 465 512 513 514 515 526 530 531 532 540 548 554 ' +
    '556 563 587 601 636 989 990 993 995 1719 1720 1723 2049 3659 4045 4190 5060 5061 6000 6566 6665 ' +
    '6666 6667 6668 6669 6679 6697 10080'
  ).split(' '),
);

/** The headers of an init as a flat `[name, value, …]` list, names lower-cased. */
function flatHeaders(init: RequestInit['headers']): string[] {
  const out: string[] = [];
  if (init === undefined || init === null) return out;
  if (init instanceof Headers) {
    // Headers iterates set-cookie values one by one, the rest combined: as fetch sends them.
    for (const [name, value] of init) out.push(name, value);
    return out;
  }
  const pairs: Iterable<readonly [string, string]> =
    typeof (init as Iterable<unknown>)[Symbol.iterator] === 'function'
      ? (init as Iterable<readonly [string, string]>)
      : Object.entries(init as Record<string, string>);
  for (const pair of pairs) {
    if (pair.length !== 2) {
      throw markInvalid(
        new TypeError(`fetch: a header pair must have 2 items, got ${pair.length}`),
      );
    }
    out.push(String(pair[0]).toLowerCase(), String(pair[1]));
  }
  return out;
}

function has(headers: readonly string[], name: string): boolean {
  for (let i = 0; i < headers.length; i += 2) if (headers[i] === name) return true;
  return false;
}

/** The body as undici's dispatch takes it, and the `content-type` fetch would give it. */
async function extractBody(
  body: unknown,
): Promise<{ body: NonNullable<Dispatcher.DispatchOptions['body']>; type: string | undefined }> {
  if (typeof body === 'string') return { body, type: 'text/plain;charset=UTF-8' };
  if (ArrayBuffer.isView(body) || body instanceof ArrayBuffer) {
    return { body: body as Uint8Array, type: undefined };
  }
  if (body instanceof URLSearchParams) {
    return { body: body.toString(), type: 'application/x-www-form-urlencoded;charset=UTF-8' };
  }
  if (body instanceof Blob) {
    return { body: body as unknown as Uint8Array, type: body.type === '' ? undefined : body.type };
  }
  if (body instanceof FormData) {
    // Encoded as fetch encodes it (its multipart boundary in the content type).
    const encoded = new Response(body);
    const type = encoded.headers.get('content-type') ?? undefined;
    return { body: Buffer.from(await encoded.arrayBuffer()), type };
  }
  // A ReadableStream or an async iterable: undici sends it chunked.
  return { body: body as Uint8Array, type: undefined };
}

function isStreamBody(body: unknown): boolean {
  return (
    body instanceof ReadableStream ||
    (typeof body === 'object' && body !== null && Symbol.asyncIterator in body)
  );
}

/** A fetch for one hop (it never follows redirects) over `dispatcher`. */
export function dispatchFetch(dispatcher: Dispatcher): FetchLike {
  return (input, init = {}) => {
    try {
      return send(dispatcher, String(input), init);
    } catch (error) {
      return Promise.reject(error);
    }
  };
}

function send(dispatcher: Dispatcher, href: string, init: RequestInit): Promise<Response> {
  const signal = init.signal ?? undefined;
  if (signal?.aborted) return Promise.reject(signal.reason);
  let url: URL;
  try {
    url = new URL(href);
  } catch (cause) {
    throw markInvalid(new TypeError(`fetch: invalid URL ${JSON.stringify(href)}`, { cause }));
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return globalThis.fetch(href, init);
  if (url.username !== '' || url.password !== '') {
    throw markInvalid(
      new TypeError('fetch: a request cannot be made to a URL that includes credentials'),
    );
  }
  if (BAD_PORTS.has(url.port)) throw markInvalid(fetchFailed(new Error('bad port')));
  let method = init.method ?? 'GET';
  const upper = upperMethod(method);
  if (NORMALIZED.has(upper)) method = upper;
  if (FORBIDDEN_METHODS.has(upper)) {
    throw markInvalid(new TypeError(`fetch: the method ${method} is forbidden`));
  }
  const hasBody = init.body !== undefined && init.body !== null;
  if (hasBody && (method === 'GET' || method === 'HEAD')) {
    throw markInvalid(
      new TypeError(`fetch: a request with the ${method} method cannot have a body`),
    );
  }
  if (hasBody && isStreamBody(init.body) && (init as { duplex?: string }).duplex !== 'half') {
    throw markInvalid(
      new TypeError("fetch: the duplex option must be 'half' when sending a stream body"),
    );
  }
  const headers = flatHeaders(init.headers);
  if (!has(headers, 'accept')) headers.push('accept', '*/*');
  if (!has(headers, 'accept-encoding')) headers.push('accept-encoding', 'gzip, deflate, br');
  // Node's fetch sends one (some APIs refuse a request without): the same value.
  if (!has(headers, 'user-agent')) headers.push('user-agent', 'node');
  const opts: Dispatcher.DispatchOptions = {
    origin: url.origin,
    path: `${url.pathname}${url.search}`,
    method: method as Dispatcher.HttpMethod,
    headers,
  };
  url.hash = '';
  const responseUrl = url.href;
  // A method that may not be sent twice waits for the next poll, so that it is never
  // written on a connection whose close had already arrived (stale.ts, afterNextPoll).
  const once = !IDEMPOTENT.has(upper);
  const dispatch = (): Promise<Response> =>
    new Promise<Response>((resolve, reject) => {
      const handler = new FetchHandler(method, responseUrl, signal, resolve, reject);
      if (once) afterNextPoll(() => signal?.aborted || dispatcher.dispatch(opts, handler));
      else dispatcher.dispatch(opts, handler);
    });
  let sent: Promise<Response>;
  if (!hasBody) sent = dispatch();
  else {
    sent = extractBody(init.body).then(({ body, type }) => {
      if (type !== undefined && !has(headers, 'content-type')) headers.push('content-type', type);
      opts.body = body;
      return dispatch();
    });
  }
  return init.redirect === 'error' ? sent.then(refuseRedirect) : sent;
}

/**
 * `redirect: 'error'`: a redirect is a network error (Fetch §4.4 step 2). The
 * caller asked for it, and the same request meets the same redirect again:
 * thrown as fetch throws it, never retried, no failure of the upstream.
 */
async function refuseRedirect(response: Response): Promise<Response> {
  if (!REDIRECTS.has(response.status) || !response.headers.has('location')) return response;
  await response.body?.cancel().catch(() => {});
  throw markInvalid(fetchFailed(new Error('unexpected redirect')));
}
