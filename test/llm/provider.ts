/**
 * A fake LLM provider on 127.0.0.1 for the SDK tests: each request gets the
 * next answer of a script (the last one repeats), and the server records
 * what it received (method, path, headers, body) so tests count requests.
 */
import type { ServerResponse } from 'node:http';
import { expect } from 'vitest';
import { createFetch, type StaunchOptions } from '../../src/index.js';
import { type FakeClock, fakeClock } from '../helpers/clock.js';
import { httpServer, type TestServer, trackedFetch } from '../helpers/server.js';

/** A sentinel API key: it must never appear in an event or an error. */
export const SECRET = 'sk-sentinel-0d9f8e7c6b5a';

export type Answer = (res: ServerResponse) => void;

/** An OpenAI chat completion saying `text`. */
export const completion = (text = 'hello', model = 'gpt-test') => ({
  id: 'chatcmpl-1',
  object: 'chat.completion',
  created: 1,
  model,
  choices: [
    {
      index: 0,
      message: { role: 'assistant', content: text },
      finish_reason: 'stop',
      logprobs: null,
    },
  ],
});

/** An Anthropic message saying `text`. */
export const message = (text = 'hello', model = 'claude-test') => ({
  id: 'msg_1',
  type: 'message',
  role: 'assistant',
  content: [{ type: 'text', text }],
  model,
  stop_reason: 'end_turn',
  stop_sequence: null,
  usage: { input_tokens: 1, output_tokens: 1 },
});

/** A JSON answer. */
export function json(status: number, body: unknown, headers: Record<string, string> = {}): Answer {
  return (res) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };
}

/** An event-stream answer: each entry is one event (`event` optional), written at once. */
export function sse(
  events: readonly { event?: string; data: unknown }[],
  headers: Record<string, string> = {},
): Answer {
  return (res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream', ...headers });
    for (const e of events) {
      const data = typeof e.data === 'string' ? e.data : JSON.stringify(e.data);
      res.write(`${e.event === undefined ? '' : `event: ${e.event}\n`}data: ${data}\n\n`);
    }
    res.end();
  };
}

/** An answer held until `release()` is called (a long generation). */
export function held(answer: Answer): {
  answer: Answer;
  release: () => void;
  waiting: () => boolean;
} {
  let pending: ServerResponse | undefined;
  return {
    answer: (res) => {
      pending = res;
    },
    release: () => {
      if (pending !== undefined) answer(pending);
    },
    waiting: () => pending !== undefined,
  };
}

export interface Provider extends TestServer {
  /** Requests received so far. */
  readonly count: number;
  /** The `x-stainless-retry-count` of each request received. */
  readonly retryCounts: string[];
}

export async function provider(script: readonly Answer[]): Promise<Provider> {
  const server = await httpServer((_req, res, index) => {
    script[Math.min(index, script.length - 1)]!(res);
  });
  // Getters, read at each use (Object.assign would copy their values once).
  return Object.defineProperties(server, {
    count: { get: () => server.received.length },
    retryCounts: {
      get: () => server.received.map((r) => String(r.headers['x-stainless-retry-count'])),
    },
  }) as Provider;
}

export interface Harness {
  clock: FakeClock;
  fetch: ReturnType<typeof createFetch>;
  /** Every event, as `[name, payload]`. */
  events: [string, unknown][];
  stop: () => void;
}

/**
 * `createFetch(options)` on a fake clock that moves by itself whenever no
 * attempt is in flight (so backoff and pacing sleeps fire, attempt timers do
 * not), with every event recorded.
 */
export function harness(make: (clock: FakeClock) => StaunchOptions, auto = true): Harness {
  const clock = fakeClock();
  const options = make(clock);
  const tracked = trackedFetch(options.fetch as typeof fetch);
  const events: [string, unknown][] = [];
  const record =
    (name: string) =>
    (event: unknown): void => {
      events.push([name, event]);
    };
  const fetch = createFetch({
    ...options,
    fetch: tracked.fetch,
    clock,
    on: {
      attempt: record('attempt'),
      retry: record('retry'),
      giveUp: record('giveUp'),
      wait: record('wait'),
      end: record('end'),
      outerRetry: record('outerRetry'),
      breakerStateChange: record('breakerStateChange'),
    },
  });
  const stop = auto ? clock.autoAdvance(tracked.idle) : () => {};
  return { clock, fetch, events, stop };
}

/** The events of one name. */
export function named<T = Record<string, unknown>>(h: Harness, name: string): T[] {
  return h.events.filter(([n]) => n === name).map(([, e]) => e as T);
}

/** The sentinel key appears in no event, and not in `error` or its cause. */
export function noSecret(h: { events: unknown[] }, error?: unknown): void {
  expect(JSON.stringify(h.events)).not.toContain(SECRET);
  if (error !== undefined) {
    expect(String(error)).not.toContain(SECRET);
    expect(String((error as { cause?: unknown }).cause)).not.toContain(SECRET);
  }
}
