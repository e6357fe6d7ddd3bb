/** Helpers of the staunch/sse tests: bytes, splits, collecting events. */
import { EventStreamParser, type ServerSentEvent } from '../../src/sse/parse.js';

export const encoder = new TextEncoder();

/** Cuts `bytes` at the given offsets (any order, duplicates and out-of-range ones ignored). */
export function split(bytes: Uint8Array, cuts: readonly number[]): Uint8Array[] {
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const chunks: Uint8Array[] = [];
  let from = 0;
  for (const p of [...points, bytes.length]) {
    if (p < from) continue;
    chunks.push(bytes.subarray(from, p));
    from = p;
  }
  return chunks;
}

/** Parses chunks with a fresh parser, ending the stream; returns the events. */
export function parseChunks(chunks: readonly Uint8Array[]): ServerSentEvent[] {
  const events: ServerSentEvent[] = [];
  const parser = new EventStreamParser((e) => events.push(e));
  for (const c of chunks) parser.push(c);
  parser.end();
  return events;
}

/** A byte stream that enqueues `chunks` one per pull and records whether it was cancelled. */
export function chunkStream(chunks: readonly Uint8Array[]): {
  stream: ReadableStream<Uint8Array>;
  cancelled: () => boolean;
} {
  let i = 0;
  let cancelled = false;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (i < chunks.length) controller.enqueue(chunks[i++]!);
      else controller.close();
    },
    cancel() {
      cancelled = true;
    },
  });
  return { stream, cancelled: () => cancelled };
}
