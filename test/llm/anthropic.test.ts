/**
 * The real `@anthropic-ai/sdk` with `createFetch(llm())` as its fetch and
 * `maxRetries: 0`, against a fake provider on 127.0.0.1 that counts
 * requests. Time is a fake clock: no test waits on the wall clock.
 */
import Anthropic, { APIConnectionError, RateLimitError } from '@anthropic-ai/sdk';
import { describe, expect, test } from 'vitest';
import { CircuitOpenError, type createFetch } from '../../src/index.js';
import { llm } from '../../src/llm/index.js';
import { EventStreamError } from '../../src/sse/index.js';
import { flush, until } from '../helpers/clock.js';
import { closeAfterEach } from '../helpers/teardown.js';
import {
  harness,
  held,
  json,
  message,
  named,
  noSecret,
  provider,
  SECRET,
  sse,
} from './provider.js';

const open = closeAfterEach();

const MODEL = 'claude-test';

const start = [
  {
    event: 'message_start',
    data: {
      type: 'message_start',
      message: {
        ...message(),
        content: [],
        stop_reason: null,
        usage: { input_tokens: 1, output_tokens: 0 },
      },
    },
  },
  {
    event: 'content_block_start',
    data: { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
  },
];
const delta = (text: string) => ({
  event: 'content_block_delta',
  data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } },
});
const end = [
  { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
  {
    event: 'message_delta',
    data: {
      type: 'message_delta',
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: { output_tokens: 2 },
    },
  },
  { event: 'message_stop', data: { type: 'message_stop' } },
];
const streamed = sse([
  ...start,
  { event: 'ping', data: { type: 'ping' } },
  delta('hel'),
  delta('lo'),
  ...end,
]);

const overloaded = { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } };
const ask = { model: MODEL, max_tokens: 64, messages: [{ role: 'user' as const, content: 'hi' }] };

function client(url: string, fetch: ReturnType<typeof createFetch>, maxRetries = 0): Anthropic {
  return new Anthropic({ apiKey: SECRET, baseURL: url, fetch, maxRetries });
}

describe('@anthropic-ai/sdk under createFetch(llm())', () => {
  test('a 529 overloaded POST is retried (no x-should-retry needed)', async () => {
    const server = open.add(await provider([json(529, overloaded), json(200, message())]));
    const h = harness((clock) => llm({ clock }));
    open.defer(h.stop);
    const res = await client(server.url, h.fetch).messages.create(ask);
    expect(res.content).toEqual([{ type: 'text', text: 'hello' }]);
    expect(server.count).toBe(2);
    expect(server.retryCounts).toEqual(['0', '1']);
    expect(named(h, 'retry')).toMatchObject([
      { status: 529, kind: 'overloaded', reason: 'status' },
    ]);
    noSecret(h);
  });

  test('a 429 with retry-after-ms and an input-tokens limit: retried after the hint, kind said', async () => {
    const server = open.add(
      await provider([
        json(
          429,
          {
            type: 'error',
            error: {
              type: 'rate_limit_error',
              message:
                'This request would exceed your rate limit of 20,000 input tokens per minute.',
            },
          },
          { 'retry-after-ms': '2500' },
        ),
        json(200, message()),
      ]),
    );
    const h = harness((clock) => llm({ clock }));
    open.defer(h.stop);
    await client(server.url, h.fetch).messages.create(ask);
    expect(server.count).toBe(2);
    expect(named(h, 'retry')).toMatchObject([
      { status: 429, kind: 'input-tokens', delaySource: 'retry-after-ms' },
    ]);
    expect(h.clock.sleeps.some((ms) => ms >= 2500 && ms <= 3000)).toBe(true);
  });

  test('a billing error on a 429 is not retried; the SDK error keeps the body', async () => {
    const server = open.add(
      await provider([
        json(429, {
          type: 'error',
          error: { type: 'billing_error', message: 'spend limit reached' },
        }),
      ]),
    );
    const h = harness((clock) => llm({ clock }));
    open.defer(h.stop);
    const error = await client(server.url, h.fetch)
      .messages.create(ask)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitError);
    expect(JSON.stringify((error as RateLimitError).error)).toContain('billing_error');
    expect(server.count).toBe(1);
    expect(named(h, 'attempt')).toMatchObject([{ status: 429, kind: 'billing_error' }]);
    noSecret(h, error);
  });

  // "0 of 50 left, full at now + 12 s": the bucket refills at 50 per 12 s, so the next request
  // fits in 240 ms; with `refill: 'at-reset'` it is held until the stated time.
  test.each([
    ['continuous', {}, 240],
    ['at-reset', { refill: 'at-reset' as const }, 12_000],
  ])(
    'anthropic-ratelimit-requests-remaining 0 with an RFC 3339 reset, refill %s',
    async (_name, extra, wait) => {
      let reset = '';
      const server = open.add(
        await provider([
          (res) =>
            json(200, message('first'), {
              'anthropic-ratelimit-requests-limit': '50',
              'anthropic-ratelimit-requests-remaining': '0',
              'anthropic-ratelimit-requests-reset': reset,
            })(res),
          json(200, message('second')),
        ]),
      );
      const h = harness((clock) => llm({ clock, ...extra }), false);
      reset = new Date(h.clock.now() + 12_000).toISOString();
      const anthropic = client(server.url, h.fetch);
      await anthropic.messages.create(ask);
      const second = anthropic.messages.create(ask);
      await until(() => h.clock.remaining().some((ms) => ms > wait * 0.9 && ms <= wait));
      await flush();
      expect(server.count).toBe(1);
      await h.clock.advance(wait);
      expect((await second).content).toEqual([{ type: 'text', text: 'second' }]);
      expect(server.count).toBe(2);
    },
  );

  test('an overloaded_error as the first stream event is retried; the stream then reads whole', async () => {
    const server = open.add(
      await provider([sse([{ event: 'error', data: overloaded }]), streamed]),
    );
    const h = harness((clock) => llm({ clock, idleTimeout: false }));
    open.defer(h.stop);
    const stream = client(server.url, h.fetch).messages.stream(ask);
    const final = await stream.finalMessage();
    expect(final.content).toEqual([{ type: 'text', text: 'hello' }]);
    expect(server.count).toBe(2);
    expect(named(h, 'retry')).toMatchObject([{ status: 529, kind: 'overloaded' }]);
  });

  test('messages.create({ stream: true }) after a 503 iterates fine', async () => {
    const server = open.add(
      await provider([
        json(503, { type: 'error', error: { type: 'api_error', message: 'busy' } }),
        streamed,
      ]),
    );
    const h = harness((clock) => llm({ clock, idleTimeout: false }));
    open.defer(h.stop);
    const stream = await client(server.url, h.fetch).messages.create({ ...ask, stream: true });
    let text = '';
    for await (const e of stream) {
      if (e.type === 'content_block_delta' && e.delta.type === 'text_delta') text += e.delta.text;
    }
    expect(text).toBe('hello');
    expect(server.count).toBe(2);
  });

  test('pings are not progress: a stream of pings alone fails at idleTimeout', async () => {
    let write: ((text: string) => void) | undefined;
    const server = open.add(
      await provider([
        (res) => {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          for (const e of [...start, delta('hel')]) {
            res.write(`event: ${e.event}\ndata: ${JSON.stringify(e.data)}\n\n`);
          }
          write = (text) => res.write(text);
        },
      ]),
    );
    const h = harness((clock) => llm({ clock, idleTimeout: 30_000 }), false);
    const stream = client(server.url, h.fetch).messages.stream(ask);
    const texts: string[] = [];
    stream.on('text', (t) => texts.push(t));
    const failed = stream.finalMessage().catch((e: unknown) => e);
    await until(() => texts.length === 1 && h.clock.remaining().includes(30_000));
    await h.clock.advance(10_000);
    write!('event: ping\ndata: {"type":"ping"}\n\n');
    await flush(20);
    await h.clock.advance(19_999);
    expect(texts).toEqual(['hel']);
    await h.clock.advance(1);
    const error = await failed;
    expect(
      error instanceof EventStreamError || (error as Error).cause instanceof EventStreamError,
    ).toBe(true);
  });

  test('a long generation outlives 60 s under llm()', async () => {
    const slow = held(json(200, message('long')));
    const server = open.add(await provider([slow.answer]));
    const h = harness((clock) => llm({ clock }), false);
    const call = client(server.url, h.fetch).messages.create(ask);
    await until(() => slow.waiting());
    await h.clock.advance(75_000);
    slow.release();
    expect((await call).content).toEqual([{ type: 'text', text: 'long' }]);
  });

  test('an open circuit surfaces as APIConnectionError with the CircuitOpenError as cause', async () => {
    const server = open.add(
      await provider([json(500, { type: 'error', error: { type: 'api_error', message: 'x' } })]),
    );
    const h = harness((clock) => ({
      ...llm({ clock }),
      retry: false,
      breaker: { consecutiveFailures: 2 },
    }));
    open.defer(h.stop);
    const anthropic = client(server.url, h.fetch);
    for (let i = 0; i < 2; i++) await anthropic.messages.create(ask).catch(() => {});
    const error = await anthropic.messages.create(ask).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APIConnectionError);
    expect((error as Error).cause).toBeInstanceOf(CircuitOpenError);
    expect(server.count).toBe(2);
    noSecret(h, error);
  });

  test("the SDK's own retries left on: one layer, said once", async () => {
    const server = open.add(await provider([json(529, overloaded)]));
    const h = harness((clock) => llm({ clock }));
    open.defer(h.stop);
    const anthropic = client(server.url, h.fetch, 2);
    (
      anthropic as unknown as { calculateDefaultRetryTimeoutMillis: () => number }
    ).calculateDefaultRetryTimeoutMillis = () => 1;
    await anthropic.messages.create(ask).catch(() => {});
    await anthropic.messages.create(ask).catch(() => {});
    expect(server.retryCounts).toEqual(['0', '1', '2', '1', '2', '0', '1', '2']);
    expect(named(h, 'outerRetry')).toHaveLength(1);
  });
});
