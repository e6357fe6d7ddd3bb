/**
 * A fetch that fails by script or by seeded chance and counts what it saw:
 * for a user's tests of code that calls `createFetch({ fetch })`, an SDK's
 * `fetch` option, or any function that takes a fetch. No socket: faults are
 * made the way a WHATWG fetch reports them (a `TypeError` whose `cause`
 * carries the network code), so staunch classifies them as it would the real
 * ones.
 */
import { type Clock, systemClock } from '../internal/clock.js';
import { checkObject, describe } from '../internal/validate.js';
import { createScript, label, type Plan, SCRIPT_KEYS, type ScriptOptions } from './script.js';
import { Seen } from './seen.js';

/** A fetch as `createFetch` takes it. */
export type FetchLike = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/** Options of {@link faultFetch}: the script, and what `'pass'` goes to. */
export interface FaultFetchOptions extends ScriptOptions {
  /** Answers the `'pass'` steps. @default none: a `'pass'` is a `200` with an empty body */
  fetch?: FetchLike;
  /** Times `delay` and `drip` (a {@link TestClock} makes them instant). @default the system clock */
  clock?: Clock;
}

/** A fetch that injects faults; `seen` is what it received. */
export interface FaultFetch {
  (input: string | URL | Request, init?: RequestInit): Promise<Response>;
  /** Every call, in order, with the step it was answered with. */
  readonly seen: Seen;
  /** Calls whose response head has not been returned yet (a stalled call stays until aborted). */
  readonly inFlight: number;
}

/** Statuses whose response has no body (the Fetch standard's null body statuses). */
const NULL_BODY = new Set([204, 205, 304]);

/** The error a WHATWG fetch throws for a network failure, with the code staunch classifies by. */
export function networkError(code: 'ECONNREFUSED' | 'ECONNRESET'): TypeError {
  const message = code === 'ECONNREFUSED' ? 'connect ECONNREFUSED' : 'other side closed';
  const cause = Object.assign(new Error(`${message} (staunch/testing)`), { code });
  return new TypeError('fetch failed', { cause });
}

/** The error a WHATWG fetch's body stream raises when the connection is cut mid-body. */
export function truncatedError(): TypeError {
  const cause = Object.assign(new Error('other side closed (staunch/testing)'), {
    code: 'UND_ERR_SOCKET',
  });
  return new TypeError('terminated', { cause });
}

/** Resolves never; rejects with the signal's reason once it aborts. */
export function stall(signal: AbortSignal | undefined): Promise<never> {
  return new Promise((_, reject) => {
    if (signal?.aborted) reject(signal.reason);
    signal?.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}

/**
 * The body of a response step as a stream: at once, a chunk every `drip`
 * ms, and an error after `truncate` bytes.
 */
function bodyStream(
  plan: Extract<Plan, { kind: 'respond' }>,
  clock: Clock,
  signal: AbortSignal | undefined,
): ReadableStream<Uint8Array> {
  const end = plan.truncate ?? plan.body.length;
  let offset = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (offset >= end) {
        if (plan.truncate === undefined) controller.close();
        else controller.error(truncatedError());
        return;
      }
      if (plan.drip > 0 && offset > 0) await clock.sleep(plan.drip, signal);
      const size = plan.drip > 0 ? plan.chunk : end - offset;
      controller.enqueue(plan.body.slice(offset, Math.min(end, offset + size)));
      offset += size;
    },
  });
}

/** The `Response` of a response step, after its `delay`. */
export async function respond(
  plan: Extract<Plan, { kind: 'respond' }>,
  clock: Clock,
  signal: AbortSignal | undefined,
): Promise<Response> {
  if (plan.delay > 0) await clock.sleep(plan.delay, signal);
  const headers = new Headers(plan.headers as [string, string][]);
  if (plan.truncate !== undefined) headers.set('content-length', String(plan.body.length));
  const body = NULL_BODY.has(plan.status) ? null : bodyStream(plan, clock, signal);
  return new Response(body, { status: plan.status, headers });
}

/** Lower-case header names, repeated values joined: what `Headers` iterates. */
export function headerRecord(headers: Headers): Record<string, string> {
  return Object.fromEntries(headers);
}

/** `source` read only as the returned stream is pulled, each chunk kept in `chunks`. */
function spyStream(
  source: ReadableStream<Uint8Array>,
  chunks: Uint8Array[],
): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const { done, value } = await reader.read();
        if (done) {
          reader.releaseLock();
          controller.close();
          return;
        }
        chunks.push(value);
        controller.enqueue(value);
      },
      cancel: (reason) => reader.cancel(reason),
    },
    { highWaterMark: 0 },
  );
}

/** The chunks as one array. */
function concat(chunks: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.byteLength, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

/**
 * A fetch that answers each call with the next step of `script`, then
 * `after` (or a seeded `chance`), and records every call in `seen`.
 * @example
 * const faulty = faultFetch({ script: [503, { status: 429, retryAfter: 2 }] });
 * const fetch = createFetch({ fetch: faulty, clock: testClock() });
 */
export function faultFetch(options: FaultFetchOptions = {}): FaultFetch {
  const o = checkObject('faultFetch options', options, [...SCRIPT_KEYS, 'fetch', 'clock']);
  if (o.fetch !== undefined && typeof o.fetch !== 'function') {
    throw new TypeError(`faultFetch options.fetch must be a function, got ${describe(o.fetch)}`);
  }
  if (o.clock !== undefined && typeof (o.clock as Clock | null)?.sleep !== 'function') {
    throw new TypeError(`faultFetch options.clock must be a Clock, got ${describe(o.clock)}`);
  }
  const next = createScript(options);
  const clock = options.clock ?? systemClock;
  const seen = new Seen();
  let inFlight = 0;
  let calls = 0;

  const answer = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const index = calls++;
    const plan = next();
    if (plan.kind === 'pass' && init?.body instanceof ReadableStream) {
      // Passed on, a stream body is read by the transport at its own pace (a spy that changes
      // nothing): its bytes are recorded as they go through, never read ahead.
      const chunks: Uint8Array[] = [];
      const forward = { ...init, body: spyStream(init.body, chunks) } as RequestInit;
      const head = new Request(input, {
        ...init,
        body: null,
        duplex: undefined,
      } as unknown as RequestInit);
      const seenRequest = seen.record({
        index,
        method: head.method,
        url: head.url,
        headers: headerRecord(head.headers),
        bytes: new Uint8Array(0),
        fault: label(plan),
      });
      Object.defineProperty(seenRequest, 'bytes', { get: () => concat(chunks), enumerable: true });
      return options.fetch ? options.fetch(input, forward) : new Response('', { status: 200 });
    }
    // A stream body is read from one branch of a tee; the transport gets the other, unread.
    let forward = init;
    let read = init;
    if (init?.body instanceof ReadableStream) {
      const [mine, theirs] = init.body.tee();
      forward = { ...init, body: theirs };
      // A stream body needs `duplex: 'half'`, which the DOM's RequestInit type lacks.
      read = { ...init, body: mine, duplex: 'half' } as RequestInit;
    }
    const request = new Request(input, read);
    // A refused connection reads nothing of the body: nothing was sent.
    const bytes =
      plan.kind === 'refuse' ? new Uint8Array(0) : new Uint8Array(await request.arrayBuffer());
    seen.record({
      index,
      method: request.method,
      url: request.url,
      headers: headerRecord(request.headers),
      bytes,
      fault: label(plan),
    });
    const signal = init?.signal ?? undefined;
    switch (plan.kind) {
      case 'refuse':
        throw networkError('ECONNREFUSED');
      case 'reset':
        throw networkError('ECONNRESET');
      case 'stall':
        return stall(signal);
      case 'respond':
        return respond(plan, clock, signal);
      case 'pass':
        // The call as it was made: a spy that changes nothing.
        return options.fetch ? options.fetch(input, forward) : new Response('', { status: 200 });
    }
  };

  const faulty = (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    inFlight++;
    return answer(input, init).finally(() => {
      inFlight--;
    });
  };
  Object.defineProperties(faulty, {
    seen: { value: seen, enumerable: true },
    inFlight: { get: () => inFlight, enumerable: true },
  });
  return faulty as FaultFetch;
}
