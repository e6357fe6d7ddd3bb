/**
 * One dispatch as a WHATWG fetch sees it: an undici dispatch handler that
 * resolves with a standard `Response` (the global class, so `instanceof
 * Response` holds) at the response headers, and streams the body into it
 * with backpressure: the socket is paused while the body stream's queue is
 * full, and resumed when the reader pulls. Cancelling the body, or aborting
 * the signal, aborts the dispatch (undici then destroys the socket unless
 * the response had ended).
 *
 * Also marks the stale keep-alive race (stale.ts) on a failure before the
 * response started, as the retry interceptor's attempts do, so that the
 * executor resends a replayable request at once.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { Duplex } from 'node:stream';
import zlib from 'node:zlib';
import type { Dispatcher } from 'undici';
import { SsrfBlockedError } from '../errors.js';
import { expectSend, markIfStale, type Probe, probe } from './stale.js';

type Controller = Dispatcher.DispatchController;

/** Statuses whose response has no body (Fetch §2.2.3 "null body status"). */
const NULL_BODY: ReadonlySet<number> = new Set([101, 103, 204, 205, 304]);

/** Bytes queued in the body stream before the socket is paused. */
const BODY_HIGH_WATER = 64 * 1024;

/** At most this many content codings are decoded (undici's limit, after curl's CVE-2022-32206). */
const MAX_CODINGS = 5;

/** A network failure as fetch reports it: `TypeError('fetch failed')`, the cause attached. */
export function fetchFailed(cause: unknown): TypeError | SsrfBlockedError {
  // The SSRF guard's refusal is thrown as itself (docs/undici.md), as the previous fetch did.
  if (cause instanceof SsrfBlockedError) return cause;
  return new TypeError('fetch failed', { cause });
}

/** Decoders for a `content-encoding` value, outermost coding last; `undefined`: leave the body as is. */
function decoders(encoding: string): Duplex[] | undefined {
  const codings = encoding.toLowerCase().split(',');
  if (codings.length > MAX_CODINGS) return undefined;
  const out: Duplex[] = [];
  for (let i = codings.length - 1; i >= 0; i--) {
    const coding = codings[i]!.trim();
    // Lenient flushing, as browsers and curl decode slightly truncated bodies.
    if (coding === 'gzip' || coding === 'x-gzip') {
      out.push(
        zlib.createGunzip({
          flush: zlib.constants.Z_SYNC_FLUSH,
          finishFlush: zlib.constants.Z_SYNC_FLUSH,
        }),
      );
    } else if (coding === 'deflate') {
      out.push(
        zlib.createInflate({
          flush: zlib.constants.Z_SYNC_FLUSH,
          finishFlush: zlib.constants.Z_SYNC_FLUSH,
        }),
      );
    } else if (coding === 'br') {
      out.push(
        zlib.createBrotliDecompress({
          flush: zlib.constants.BROTLI_OPERATION_FLUSH,
          finishFlush: zlib.constants.BROTLI_OPERATION_FLUSH,
        }),
      );
    } else if (coding !== 'identity' && coding !== '') {
      // An unknown coding: the body goes to the caller undecoded, as fetch does.
      return [];
    }
  }
  return out;
}

function toHeaders(headers: IncomingHttpHeaders): Headers {
  const out = new Headers();
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined) continue;
    if (typeof value === 'string') out.append(name, value);
    else for (const v of value) out.append(name, v);
  }
  return out;
}

export class FetchHandler implements Dispatcher.DispatchHandler {
  readonly #method: string;
  readonly #url: string;
  readonly #signal: AbortSignal | undefined;
  readonly #probe: Probe = probe();
  #resolve: ((response: Response) => void) | undefined;
  #reject: ((error: unknown) => void) | undefined;
  #controller: Controller | undefined;
  #body: ReadableStreamDefaultController<Uint8Array> | undefined;
  #done = false;
  #onAbort: (() => void) | undefined;

  constructor(
    method: string,
    url: string,
    signal: AbortSignal | undefined,
    resolve: (response: Response) => void,
    reject: (error: unknown) => void,
  ) {
    this.#method = method;
    this.#url = url;
    this.#signal = signal;
    this.#resolve = resolve;
    this.#reject = reject;
    if (signal !== undefined) {
      this.#onAbort = () => this.#abort(signal.reason);
      signal.addEventListener('abort', this.#onAbort, { once: true });
    }
  }

  /** The request is over (the body ended, failed or was cancelled): the signal is no longer heard. */
  #finish(): void {
    this.#done = true;
    if (this.#onAbort !== undefined) {
      this.#signal!.removeEventListener('abort', this.#onAbort);
      this.#onAbort = undefined;
    }
  }

  #abort(reason: unknown): void {
    if (this.#done) return;
    const reject = this.#reject;
    if (reject !== undefined) {
      this.#resolve = this.#reject = undefined;
      reject(reason);
    } else this.#body?.error(reason);
    this.#finish();
    this.#controller?.abort(reason as Error);
  }

  onRequestStart(controller: Controller): void {
    this.#controller = controller;
    if (this.#done) {
      controller.abort(this.#signal?.reason as Error);
      return;
    }
    expectSend(this.#probe);
  }

  onResponseStart(
    controller: Controller,
    status: number,
    headers: IncomingHttpHeaders,
    statusText?: string,
  ): void {
    // 1xx informational responses are not the response.
    if (status < 200 || this.#resolve === undefined) return;
    const resolve = this.#resolve;
    const reject = this.#reject!;
    this.#resolve = this.#reject = undefined;
    const nullBody = NULL_BODY.has(status) || this.#method === 'HEAD';
    let body: ReadableStream<Uint8Array> | null = null;
    if (!nullBody) {
      body = new ReadableStream<Uint8Array>(
        {
          start: (c) => {
            this.#body = c;
          },
          pull: () => {
            if (controller.paused) controller.resume();
          },
          cancel: (reason) => {
            if (this.#done) return;
            this.#finish();
            controller.abort((reason as Error) ?? new Error('The body was cancelled'));
          },
        },
        new ByteLengthQueuingStrategy({ highWaterMark: BODY_HIGH_WATER }),
      );
      const encoding = headers['content-encoding'];
      if (typeof encoding === 'string') {
        for (const decoder of decoders(encoding) ?? []) {
          body = body.pipeThrough(
            Duplex.toWeb(decoder) as unknown as TransformStream<Uint8Array, Uint8Array>,
          );
        }
      }
    }
    let response: Response;
    try {
      response = new Response(body, {
        status,
        statusText: statusText ?? '',
        headers: toHeaders(headers),
      });
    } catch (error) {
      // A status fetch cannot represent (over 599), a header it refuses: a network error, as in fetch.
      this.#finish();
      reject(fetchFailed(error));
      controller.abort(error as Error);
      return;
    }
    Object.defineProperty(response, 'url', { value: this.#url, enumerable: false });
    if (nullBody) this.#body = undefined;
    resolve(response);
  }

  onResponseData(controller: Controller, chunk: Buffer): void {
    const body = this.#body;
    if (body === undefined || this.#done) return;
    body.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    if ((body.desiredSize ?? 1) <= 0) controller.pause();
  }

  onResponseEnd(): void {
    if (this.#done) return;
    this.#body?.close();
    this.#finish();
  }

  onResponseError(_controller: Controller | undefined, error: Error): void {
    if (this.#done) return;
    const reject = this.#reject;
    if (reject !== undefined) {
      this.#resolve = this.#reject = undefined;
      markIfStale(error, this.#probe);
      this.#finish();
      reject(fetchFailed(error));
      return;
    }
    this.#body?.error(new TypeError('terminated', { cause: error }));
    this.#finish();
  }
}
