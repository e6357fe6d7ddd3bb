/**
 * Request bodies across attempts. Strings, bytes, Blob and URLSearchParams are
 * handed to every attempt as they are (fetch re-encodes them the same way each
 * time); FormData is encoded once so every attempt carries the same bytes and
 * boundary; a ReadableStream is sent at most once, unless an attempt failed
 * before reading a single chunk of it, and is cancelled when the request
 * fails (as fetch cancels its body on an abort or a network error).
 */
import { noop } from './internal/clock.js';

/** A body as each attempt should send it. */
export interface AttemptBody {
  /** The body for the next attempt. */
  next(): unknown;
  /**
   * Can another attempt still send this body? `unsent` is true when the failed
   * attempt provably never reached the server (its connection was never made).
   */
  resendable(unsent: boolean): boolean;
  /**
   * The request failed with `reason`: a stream body that no attempt will read
   * again is cancelled with it, once, and its reader released. Absent for
   * bodies that hold nothing open.
   */
  end?(reason: unknown): void;
}

const always = (): boolean => true;
const NO_BODY: AttemptBody = { next: () => undefined, resendable: always };

/** No body, or one every attempt sends as it is: several attempts may be in flight at once (hedging). */
export function isFixedBody(body: AttemptBody): boolean {
  return body.resendable === always;
}

function fixed(value: unknown): AttemptBody {
  return { next: () => value, resendable: always };
}

function isStream(value: unknown): value is ReadableStream<Uint8Array> {
  return typeof ReadableStream !== 'undefined' && value instanceof ReadableStream;
}

/** Bytes of a stream body kept to resend after a connection that was never made. */
const STREAM_REPLAY_LIMIT = 64 * 1024;

/**
 * Wraps a stream so that each attempt gets a fresh stream over the same
 * source, and staunch holds the source's reader (so it can cancel it and
 * release it whatever the transport did with its own stream). Transports
 * read ahead before they connect (undici pulls the first chunk), so the
 * chunks read so far are kept, up to `limit` bytes: when an attempt failed
 * without ever connecting, nothing reached the server and the next attempt
 * sends those chunks again, then the rest. After any other failure, a stream
 * from which anything was read is not sent again. `limit` 0: one attempt.
 */
function lazyStream(source: ReadableStream<Uint8Array>, limit: number): AttemptBody {
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  const kept: Uint8Array[] = [];
  let bytes = 0;
  let overflow = false;
  /** The source was read to its end, or cancelled: its reader is released. */
  let ended = false;
  const release = (): void => {
    ended = true;
    // Nothing is pending once the source is done or cancelled; a runtime that disagrees keeps the lock.
    try {
      reader?.releaseLock();
    } catch {}
  };
  return {
    next: () => {
      let replayed = 0;
      return new ReadableStream<Uint8Array>(
        {
          async pull(controller) {
            if (replayed < kept.length) {
              controller.enqueue(kept[replayed++]!.slice());
              return;
            }
            if (ended) {
              controller.close();
              return;
            }
            reader ??= source.getReader();
            const { done, value } = await reader.read();
            if (done) {
              if (!ended) release();
              controller.close();
              return;
            }
            bytes += value.byteLength;
            if (!overflow && bytes <= limit) {
              kept.push(value.slice());
              replayed++;
            } else {
              overflow = true;
              kept.length = 0;
            }
            controller.enqueue(value);
          },
        },
        { highWaterMark: 0 },
      );
    },
    resendable: (unsent) => bytes === 0 || (unsent && !overflow),
    end: (reason) => {
      if (ended) return;
      if (reader === undefined) {
        ended = true;
        if (!source.locked) source.cancel(reason).catch(noop);
        return;
      }
      reader.cancel(reason).catch(noop);
      release();
    },
  };
}

/** Something that is iterated once, such as an async iterable: sent at most once. */
function oneShot(value: unknown): AttemptBody {
  let sent = false;
  return {
    next: () => {
      sent = true;
      return value;
    },
    resendable: () => !sent,
  };
}

/**
 * Prepares a body for several attempts, or returns `undefined` for a FormData
 * that must first go through `encodeFormData` (so that the common bodies cost
 * no await).
 */
export function prepareBody(body: unknown, retries: boolean): AttemptBody | undefined {
  if (body === undefined || body === null) return NO_BODY;
  if (
    typeof body === 'string' ||
    body instanceof ArrayBuffer ||
    ArrayBuffer.isView(body) ||
    (typeof Blob !== 'undefined' && body instanceof Blob) ||
    (typeof URLSearchParams !== 'undefined' && body instanceof URLSearchParams)
  ) {
    return fixed(body);
  }
  if (typeof FormData !== 'undefined' && body instanceof FormData) {
    return retries ? undefined : fixed(body);
  }
  if (isStream(body)) return lazyStream(body, retries ? STREAM_REPLAY_LIMIT : 0);
  return oneShot(body);
}

/**
 * Encodes a FormData once, so that every attempt carries the same bytes:
 * fetch would pick a new multipart boundary on each. Returns the body and the
 * content type with its boundary.
 */
export async function encodeFormData(
  form: FormData,
): Promise<{ body: AttemptBody; contentType: string | undefined }> {
  const encoded = new Response(form);
  const contentType = encoded.headers.get('content-type') ?? undefined;
  return { body: fixed(await encoded.arrayBuffer()), contentType };
}

/**
 * The request failed before a body was prepared (a mistake in its options):
 * a stream body is cancelled all the same, so every failure ends it once.
 */
export function cancelStreamBody(body: unknown, reason: unknown): void {
  if (isStream(body) && !body.locked) body.cancel(reason).catch(noop);
}
