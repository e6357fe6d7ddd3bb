/**
 * Request bodies across attempts. Strings, bytes, Blob and URLSearchParams are
 * handed to every attempt as they are (fetch re-encodes them the same way each
 * time); FormData is encoded once so every attempt carries the same bytes and
 * boundary; a ReadableStream is sent at most once, unless an attempt failed
 * before reading a single chunk of it.
 */

/** A body as each attempt should send it. */
export interface AttemptBody {
  /** The body for the next attempt. */
  next(): unknown;
  /** Can another attempt still send this body? */
  resendable(): boolean;
}

const NO_BODY: AttemptBody = { next: () => undefined, resendable: () => true };

function fixed(value: unknown): AttemptBody {
  return { next: () => value, resendable: () => true };
}

function isStream(value: unknown): value is ReadableStream<Uint8Array> {
  return typeof ReadableStream !== 'undefined' && value instanceof ReadableStream;
}

/**
 * Wraps a stream so that each attempt gets a fresh stream over the same
 * reader. The wrapper pulls only when the transport reads (high-water mark 0),
 * so an attempt that failed before sending leaves the source untouched and the
 * next attempt can still send it whole.
 */
function lazyStream(source: ReadableStream<Uint8Array>): AttemptBody {
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  let pulled = false;
  return {
    next: () =>
      new ReadableStream<Uint8Array>(
        {
          async pull(controller) {
            pulled = true;
            reader ??= source.getReader();
            const { done, value } = await reader.read();
            if (done) controller.close();
            else controller.enqueue(value);
          },
          cancel(reason) {
            if (pulled) return (reader ?? source).cancel(reason);
          },
        },
        { highWaterMark: 0 },
      ),
    resendable: () => !pulled,
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
  if (isStream(body)) return retries ? lazyStream(body) : oneShot(body);
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
