/**
 * Resumable downloads (`createFetch({ resume: true })`): the body of a GET
 * that fails mid-stream is continued with a range request, validated so that
 * the bytes handed on are exactly the representation's bytes, none missing
 * and none twice. When the server cannot prove it continues the same
 * representation from the same offset, the body fails with a `ResumeError`.
 *
 * RFC 9110 §14 (ranges), §13.1.1 (`If-Match`), §8.8.3 (strong ETags).
 */
import { StaunchError, type StaunchErrorCode, type StaunchErrorOptions } from './errors.js';
import { noop } from './internal/clock.js';
import { redactUrl } from './internal/redact.js';
import { checkNumber, checkObject } from './internal/validate.js';

/** The body of a resumable download could not be continued (the bytes read so far are all correct). */
export class ResumeError extends StaunchError {
  static override readonly code: StaunchErrorCode = 'STAUNCH_RESUME';
  override name = 'ResumeError';
  /** Bytes of the body delivered before the failure. */
  readonly offset: number;

  constructor(message: string, offset: number, options?: StaunchErrorOptions) {
    super(message, options);
    this.offset = offset;
  }
}

/** Options of `resume`. */
export interface ResumeOptions {
  /** Range requests made, at most, to finish one body. @default 5 */
  attempts?: number;
}

/** @internal Resolved resume options. */
export interface ResolvedResumeOptions {
  readonly attempts: number;
}

/** Sends the continuation request with these extra headers; the caller's signal still applies. */
export type Refetch = (headers: readonly [string, string][]) => Promise<Response>;

/** What the first response promised: the validator and the length to continue. */
interface Representation {
  /** The strong ETag, or `undefined`. */
  readonly etag: string | undefined;
  readonly lastModified: string | undefined;
  /** The full length, when the first response said it. */
  readonly length: number | undefined;
}

const CONTENT_RANGE = /^bytes (\d+)-(\d+)\/(\d+|\*)$/;

/**
 * Can this response's body be resumed, and how? A 200 with a body, no content
 * coding (ranges count the coded bytes; the body handed on is decoded), ranges
 * not refused, and a validator: a strong ETag, else Last-Modified for
 * `If-Range`. Returns the reason it cannot otherwise.
 */
function representation(response: Response): Representation | string {
  const h = response.headers;
  const coding = h.get('content-encoding');
  if (coding !== null && coding.toLowerCase() !== 'identity') {
    return `the body has a content coding (${coding}), ranges would not line up`;
  }
  if (h.get('accept-ranges')?.toLowerCase() === 'none') return 'the server refuses ranges';
  const etag = h.get('etag') ?? undefined;
  const strong = etag !== undefined && !etag.startsWith('W/') ? etag : undefined;
  const lastModified = h.get('last-modified') ?? undefined;
  if (strong === undefined && lastModified === undefined) {
    return 'the response has no strong ETag nor Last-Modified to check the rest against';
  }
  const raw = h.get('content-length');
  const length = raw !== null && /^\d+$/.test(raw) ? Number(raw) : undefined;
  return { etag: strong, lastModified, length };
}

/**
 * The response with a body that resumes: when reading it fails, a range
 * request continues from the last byte delivered. `method` and `url` only
 * label errors (already redacted).
 */
export function resumable(
  response: Response,
  refetch: Refetch,
  options: ResolvedResumeOptions,
  label: { method: string; url: string; signal?: AbortSignal | null | undefined },
): Response {
  if (response.status !== 200 || response.body === null) return response;
  const rep = representation(response);
  let reader = response.body.getReader();
  let offset = 0;
  let resumes = 0;
  const fail = (why: string, cause: unknown): ResumeError =>
    new ResumeError(
      `${label.method} ${label.url}: the body failed after ${offset} bytes and cannot be resumed: ${why}`,
      offset,
      { method: label.method, url: label.url, cause },
    );

  /** The representation's length: the first response's, else the first 206's total. */
  let total = typeof rep === 'string' ? undefined : rep.length;
  /** Where the current 206 must end (exclusive); `undefined` while reading the first 200. */
  let end: number | undefined;

  const resume = async (cause: unknown): Promise<void> => {
    if (typeof rep === 'string') throw fail(rep, cause);
    if (resumes >= options.attempts) {
      throw fail(`${options.attempts} range requests already made`, cause);
    }
    resumes++;
    const headers: [string, string][] = [['range', `bytes=${offset}-`]];
    // If-Match on a strong ETag: a changed representation is a 412, never spliced in.
    if (rep.etag !== undefined) headers.push(['if-match', rep.etag]);
    else headers.push(['if-range', rep.lastModified!]);
    const next = await refetch(headers).catch((error: unknown) => {
      throw fail('the range request failed', error);
    });
    const part = continuation(next, rep, offset, total);
    if (typeof part === 'string') {
      await next.body?.cancel().catch(noop);
      throw fail(part, cause);
    }
    ({ end, total } = part);
    reader = next.body!.getReader();
  };

  /** A 206 whose body disagrees with its own Content-Range: none of the extra bytes are handed on. */
  const misframed = async (why: string): Promise<never> => {
    await reader.cancel().catch(noop);
    throw fail(why, undefined);
  };

  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      // Bounded: each failure spends one of `options.attempts` resumes.
      for (;;) {
        try {
          const { done, value } = await reader.read();
          if (done) {
            if (end !== undefined && offset < end) {
              await misframed(`the 206 ended at byte ${offset}, short of its range end ${end}`);
            }
            if (total !== undefined && offset < total) {
              await resume(new Error(`body ended at ${offset} of ${total} bytes`));
              continue;
            }
            controller.close();
            return;
          }
          // RFC 9110 §14.4: a 206 carries its range and nothing else; bytes past it are not the file.
          if (end !== undefined && offset + value.byteLength > end) {
            await misframed(`the 206 runs past its range end ${end}`);
          }
          offset += value.byteLength;
          controller.enqueue(value);
          return;
        } catch (error) {
          // The caller's abort (or deadline) ends the body as it is: never resumed.
          if (error instanceof ResumeError || label.signal?.aborted) throw error;
          await resume(error);
        }
      }
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
  const out = new Response(body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
  // Response.url and .redirected are read-only and empty on a constructed Response.
  Object.defineProperty(out, 'url', { value: response.url });
  Object.defineProperty(out, 'redirected', { value: response.redirected });
  return out;
}

/** Where a 206 ends (exclusive) and the representation's length, once checked. */
interface Part {
  readonly end: number;
  readonly total: number | undefined;
}

/**
 * The part `next` carries when it continues `rep` at `offset` (`total`: the
 * length known so far), or why it does not.
 */
function continuation(
  next: Response,
  rep: Representation,
  offset: number,
  total: number | undefined,
): Part | string {
  if (next.status === 412) return 'the representation changed (412 to If-Match)';
  if (next.status === 200) {
    return rep.etag === undefined
      ? 'the representation changed or the server ignores Range (200 to If-Range)'
      : 'the server ignores Range (200 instead of 206)';
  }
  if (next.status !== 206) return `the range request got ${next.status}`;
  if (next.body === null) return 'the 206 has no body';
  const raw = next.headers.get('content-range') ?? '';
  const range = CONTENT_RANGE.exec(raw);
  if (range === null) return 'the 206 has no single byte range in Content-Range';
  const start = Number(range[1]);
  const last = Number(range[2]);
  const size = range[3] === '*' ? undefined : Number(range[3]);
  if (start !== offset) return `the 206 starts at byte ${start}, not ${offset}`;
  if (last < start || (size !== undefined && last >= size)) {
    return `the 206's Content-Range is not a range of its representation (${raw})`;
  }
  if (total !== undefined && size !== total) {
    return `the 206 is of a ${size ?? 'unknown'}-byte representation, not ${total}`;
  }
  const etag = next.headers.get('etag');
  if (rep.etag !== undefined && etag !== null && etag !== rep.etag) {
    return 'the representation changed (another ETag)';
  }
  const length = next.headers.get('content-length');
  if (length !== null && /^\d+$/.test(length) && Number(length) !== last - start + 1) {
    return `the 206 carries ${length} bytes for the ${last - start + 1}-byte range ${start}-${last}`;
  }
  return { end: last + 1, total: size };
}

/** Validates `resume`: `true` is the defaults, `false`/`undefined` off. */
export function resolveResumeOptions(
  input: boolean | ResumeOptions | undefined,
): ResolvedResumeOptions | undefined {
  if (input === undefined || input === false) return undefined;
  if (input === true) return Object.freeze({ attempts: 5 });
  const o = checkObject('resume', input, ['attempts']);
  const attempts =
    o.attempts === undefined
      ? 5
      : checkNumber('resume.attempts', o.attempts, { min: 1, max: 100, integer: true });
  return Object.freeze({ attempts });
}

/**
 * The fetch adapter's hook: a GET without its own `Range` gets a resumable
 * body; `send` sends the continuation with the request's headers plus the
 * range and validator headers.
 */
export function withResume(
  response: Promise<Response>,
  options: ResolvedResumeOptions,
  method: string,
  url: string,
  init: Pick<RequestInit, 'headers' | 'signal'>,
  send: (headers: [string, string][]) => Promise<Response>,
): Promise<Response> {
  const { headers, signal } = init;
  if (method !== 'GET' || new Headers(headers).has('range')) return response;
  const refetch: Refetch = (extra) => {
    const merged = new Headers(headers);
    for (const [name, value] of extra) merged.set(name, value);
    return send([...merged]);
  };
  return response.then((r) =>
    resumable(r, refetch, options, { method, url: redactUrl(url), signal }),
  );
}
