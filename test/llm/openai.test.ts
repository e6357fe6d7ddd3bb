/**
 * The real `openai` SDK with `createFetch(llm())` as its fetch and
 * `maxRetries: 0`, against a fake provider on 127.0.0.1 that counts requests.
 * Time is a fake clock: no test waits on the wall clock.
 */
import OpenAI, { APIConnectionError, RateLimitError } from 'openai';
import { describe, expect, test } from 'vitest';
import { CircuitOpenError, type createFetch } from '../../src/index.js';
import { llm } from '../../src/llm/index.js';
import { EventStreamError } from '../../src/sse/index.js';
import { flush, until } from '../helpers/clock.js';
import { closeAfterEach } from '../helpers/teardown.js';
import {
  completion,
  type Harness,
  harness,
  held,
  json,
  named,
  noSecret,
  type Provider,
  provider,
  SECRET,
  sse,
} from './provider.js';

const open = closeAfterEach();

const chunk = (content: string) => ({
  id: 'chatcmpl-1',
  object: 'chat.completion.chunk',
  created: 1,
  model: 'gpt-test',
  choices: [{ index: 0, delta: { content }, finish_reason: null }],
});

const streamed = sse([{ data: chunk('hel') }, { data: chunk('lo') }, { data: '[DONE]' }]);

const ask = { model: 'gpt-test', messages: [{ role: 'user' as const, content: 'hi' }] };

function client(url: string, fetch: ReturnType<typeof createFetch>, maxRetries = 0): OpenAI {
  return new OpenAI({ apiKey: SECRET, baseURL: `${url}/v1`, fetch, maxRetries });
}

/** Streams a completion through llm() (no idle timeout), and checks it read `hello`. */
async function streamsHello(server: Provider): Promise<Harness> {
  const h = harness((clock) => llm({ clock, idleTimeout: false }));
  open.defer(h.stop);
  const stream = await client(server.url, h.fetch).chat.completions.create({
    ...ask,
    stream: true,
  });
  let text = '';
  for await (const part of stream) text += part.choices[0]?.delta.content ?? '';
  expect(text).toBe('hello');
  return h;
}

describe('openai SDK under createFetch(llm())', () => {
  test('a 429 with retry-after-ms is retried after the hint, the retry counted in x-stainless-retry-count', async () => {
    const server = open.add(
      await provider([
        json(
          429,
          {
            error: {
              message: 'Rate limit reached on tokens per min (TPM)',
              type: 'tokens',
              code: 'rate_limit_exceeded',
            },
          },
          { 'retry-after-ms': '1500' },
        ),
        json(200, completion()),
      ]),
    );
    const h = harness((clock) => llm({ clock }));
    open.defer(h.stop);
    const res = await client(server.url, h.fetch).chat.completions.create(ask);
    expect(res.choices[0]!.message.content).toBe('hello');
    expect(server.count).toBe(2);
    expect(server.retryCounts).toEqual(['0', '1']);
    const [retry] = named(h, 'retry');
    expect(retry).toMatchObject({ status: 429, kind: 'tokens', delaySource: 'retry-after-ms' });
    expect(h.clock.sleeps.some((ms) => ms >= 1500 && ms <= 1800)).toBe(true);
    noSecret(h);
  });

  test('requests-per-minute and tokens-per-minute 429s are told apart', async () => {
    const server = open.add(
      await provider([
        json(
          429,
          {
            error: {
              message: 'Rate limit reached on requests per min (RPM)',
              type: 'requests',
              code: 'rate_limit_exceeded',
            },
          },
          { 'retry-after-ms': '10' },
        ),
        json(
          429,
          { error: { message: 'slow down', type: 'x', code: 'rate_limit_exceeded' } },
          {
            'retry-after-ms': '10',
            'x-ratelimit-remaining-tokens': '0',
            'x-ratelimit-reset-tokens': '20ms',
          },
        ),
        json(200, completion()),
      ]),
    );
    const h = harness((clock) => llm({ clock }));
    open.defer(h.stop);
    await client(server.url, h.fetch).chat.completions.create(ask);
    expect(named(h, 'retry').map((e) => e.kind)).toEqual(['requests', 'tokens']);
  });

  test('an insufficient-quota 429 is never retried: one request, the SDK error carries the code', async () => {
    const server = open.add(
      await provider([
        json(429, {
          error: {
            message: 'You exceeded your current quota',
            type: 'insufficient_quota',
            code: 'insufficient_quota',
            param: null,
          },
        }),
      ]),
    );
    const h = harness((clock) => llm({ clock }));
    open.defer(h.stop);
    const error = await client(server.url, h.fetch)
      .chat.completions.create(ask)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitError);
    expect((error as RateLimitError).code).toBe('insufficient_quota');
    expect(server.count).toBe(1);
    expect(named(h, 'attempt')).toMatchObject([{ status: 429, kind: 'insufficient_quota' }]);
    expect(named(h, 'retry')).toEqual([]);
    noSecret(h, error);
  });

  // "0 of 500 left, full in 20 s": the bucket refills at 25/s, so the next request fits in
  // 40 ms; a gateway counting fixed windows (`refill: 'at-reset'`) is held for the 20 s.
  test.each([
    ['continuous', {}, 40],
    ['at-reset', { refill: 'at-reset' as const }, 20_000],
  ])(
    'remaining 0 with a Go-duration reset, refill %s: the next request waits %#',
    async (_name, extra, wait) => {
      const server = open.add(
        await provider([
          json(200, completion('first'), {
            'x-ratelimit-limit-requests': '500',
            'x-ratelimit-remaining-requests': '0',
            'x-ratelimit-reset-requests': '20s',
          }),
          json(200, completion('second')),
        ]),
      );
      const h = harness((clock) => llm({ clock, ...extra }), false);
      const openai = client(server.url, h.fetch);
      await openai.chat.completions.create(ask);
      const second = openai.chat.completions.create(ask);
      await until(() => h.clock.remaining().some((ms) => ms > wait - 1_000 && ms <= wait));
      await flush();
      expect(server.count).toBe(1);
      await h.clock.advance(wait);
      expect((await second).choices[0]!.message.content).toBe('second');
      expect(server.count).toBe(2);
      expect(named(h, 'wait')).toMatchObject([{ reason: 'rate-limit', duration: wait }]);
    },
  );

  test('x-should-retry: false on a 503 is not retried', async () => {
    const server = open.add(
      await provider([
        json(
          503,
          { error: { message: 'no', type: 'server_error' } },
          { 'x-should-retry': 'false' },
        ),
      ]),
    );
    const h = harness((clock) => llm({ clock }));
    open.defer(h.stop);
    const error = await client(server.url, h.fetch)
      .chat.completions.create(ask)
      .catch((e: unknown) => e);
    expect((error as { status?: number }).status).toBe(503);
    expect(server.count).toBe(1);
  });

  test('a streamed completion after a 503 iterates fine', async () => {
    const server = open.add(
      await provider([json(503, { error: { message: 'busy', type: 'server_error' } }), streamed]),
    );
    const h = await streamsHello(server);
    expect(server.count).toBe(2);
    expect(named(h, 'retry')).toMatchObject([{ status: 503, reason: 'status' }]);
  });

  test('an error as the first stream event is retried', async () => {
    const server = open.add(
      await provider([
        sse([
          {
            data: { error: { message: 'overloaded', type: 'server_error', code: 'server_error' } },
          },
        ]),
        streamed,
      ]),
    );
    await streamsHello(server);
    expect(server.count).toBe(2);
  });

  test('a stream that goes quiet past idleTimeout fails; comments do not count as progress', async () => {
    let write: ((text: string) => void) | undefined;
    const server = open.add(
      await provider([
        (res) => {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.write(`data: ${JSON.stringify(chunk('hel'))}\n\n`);
          write = (text) => res.write(text);
        },
      ]),
    );
    const h = harness((clock) => llm({ clock, idleTimeout: 30_000 }), false);
    const stream = await client(server.url, h.fetch).chat.completions.create({
      ...ask,
      stream: true,
    });
    const parts: string[] = [];
    const done = (async () => {
      for await (const part of stream) parts.push(part.choices[0]?.delta.content ?? '');
    })().catch((e: unknown) => e);
    await until(() => parts.length === 1 && h.clock.remaining().includes(30_000));
    await h.clock.advance(10_000);
    write!(': keep-alive comment\n\n');
    await flush(20);
    await h.clock.advance(19_999);
    expect(parts).toEqual(['hel']);
    await h.clock.advance(1);
    const error = await done;
    expect(error).toBeInstanceOf(EventStreamError);
    expect(error).toMatchObject({ reason: 'idle', events: 1 });
  });

  test('a long generation outlives 60 s under llm(), and fails at 60 s with plain defaults', async () => {
    const slow = held(json(200, completion('long')));
    const server = open.add(await provider([slow.answer]));
    const h = harness((clock) => llm({ clock }), false);
    const call = client(server.url, h.fetch).chat.completions.create(ask);
    await until(() => slow.waiting());
    await h.clock.advance(75_000);
    slow.release();
    expect((await call).choices[0]!.message.content).toBe('long');

    const slow2 = held(json(200, completion('long')));
    const server2 = open.add(await provider([slow2.answer]));
    const plain = harness(() => ({}), false);
    const failing = client(server2.url, plain.fetch)
      .chat.completions.create(ask)
      .catch((e: unknown) => e);
    await until(() => slow2.waiting());
    await plain.clock.advance(60_000);
    const error = await failing;
    expect(error).toBeInstanceOf(APIConnectionError);
    slow2.release();
  });

  test('an open circuit surfaces as the SDK connection error (cause kept, no secret); another model is not affected', async () => {
    const failure = json(500, { error: { message: 'boom', type: 'server_error' } });
    const server = open.add(await provider([failure, failure, json(200, completion('other'))]));
    const h = harness((clock) => ({
      ...llm({ clock }),
      retry: false,
      breaker: { consecutiveFailures: 2 },
    }));
    open.defer(h.stop);
    const openai = client(server.url, h.fetch);
    for (let i = 0; i < 2; i++) await openai.chat.completions.create(ask).catch(() => {});
    const error = await openai.chat.completions.create(ask).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APIConnectionError);
    expect((error as Error).cause).toBeInstanceOf(CircuitOpenError);
    expect(String((error as Error).cause)).toContain('gpt-test');
    expect(server.count).toBe(2);
    noSecret(h, error);
    // Keys per model: the circuit of gpt-test is open, gpt-other's is not.
    const other = await openai.chat.completions.create({ ...ask, model: 'gpt-other' });
    expect(other.choices[0]!.message.content).toBe('other');
    expect(server.count).toBe(3);
    expect(named(h, 'breakerStateChange')).toMatchObject([{ to: 'open' }]);
    expect(named<{ key: string }>(h, 'breakerStateChange')[0]!.key).toMatch(/\|gpt-test$/);
  });

  test("the SDK's own retries left on: one layer, detected, said once", async () => {
    const server = open.add(
      await provider([json(503, { error: { message: 'busy', type: 'server_error' } })]),
    );
    const h = harness((clock) => llm({ clock }));
    open.defer(h.stop);
    const openai = client(server.url, h.fetch, 2);
    // The SDK sleeps its own backoff on the real clock; keep it short.
    (
      openai as unknown as { calculateDefaultRetryTimeoutMillis: () => number }
    ).calculateDefaultRetryTimeoutMillis = () => 1;
    await openai.chat.completions.create(ask).catch(() => {});
    // The first call: staunch retried the SDK's first attempt (3), then saw the SDK's retry count.
    expect(server.retryCounts).toEqual(['0', '1', '2', '1', '2']);
    await openai.chat.completions.create(ask).catch(() => {});
    // From then on: the SDK's count alone (1 + 2 retries), not a product.
    expect(server.count).toBe(5 + 3);
    expect(server.retryCounts.slice(5)).toEqual(['0', '1', '2']);
    expect(named(h, 'outerRetry')).toMatchObject([{ header: 'x-stainless-retry-count', value: 1 }]);
  });
});
