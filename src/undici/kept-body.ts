/**
 * A one-shot request body kept as it is sent, so that a replayable request
 * can be sent again: undici's `fetch` (and Node's over a staunch agent) hands
 * the dispatcher every body, a string's included, as an async generator.
 */
import type { Dispatcher } from 'undici';
import { headerPairs } from './headers.js';

/**
 * `body` kept when it is one-shot (an async iterable, not a Node stream:
 * call.ts) and declares a `content-length` of at most `limit` bytes (undici
 * checks what is sent against it, so no more is ever kept).
 */
export function keepBody(
  body: unknown,
  headers: Dispatcher.DispatchOptions['headers'],
  limit: number,
): KeptBody | undefined {
  if (limit <= 0 || typeof body !== 'object' || body === null) return undefined;
  const o = body as { [Symbol.asyncIterator]?: unknown; pipe?: unknown };
  if (typeof o[Symbol.asyncIterator] !== 'function' || typeof o.pipe === 'function')
    return undefined;
  for (const [name, value] of headerPairs(headers)) {
    if (name.length === 14 && name.toLowerCase() === 'content-length') {
      const n = Number(value);
      const kept = Number.isSafeInteger(n) && n >= 0 && n <= limit;
      return kept ? new KeptBody(body as AsyncIterable<unknown>) : undefined;
    }
  }
  return undefined;
}

/**
 * Each attempt iterates it afresh: the chunks kept so far, then the rest of
 * the source, each kept before it is handed on. A chunk read for an attempt
 * that was aborted meanwhile is kept too, so the next attempt sends it.
 */
export class KeptBody implements AsyncIterable<unknown> {
  readonly #source: AsyncIterator<unknown>;
  readonly #chunks: unknown[] = [];
  #done = false;

  constructor(source: AsyncIterable<unknown>) {
    this.#source = source[Symbol.asyncIterator]();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<unknown> {
    const chunks = this.#chunks;
    for (let i = 0; ; ) {
      if (i < chunks.length) {
        yield chunks[i++];
        continue;
      }
      if (this.#done) return;
      const next = await this.#source.next();
      if (next.done === true) this.#done = true;
      else chunks.push(next.value);
    }
  }
}
