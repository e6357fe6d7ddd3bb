/**
 * Tokens paced before any 429: the estimate of a request's size, and the
 * hold until the tokens window resets when it does not fit in what the last
 * response said is left (minus the requests in flight). A fake provider on
 * 127.0.0.1 counts requests; a fake clock, never the wall clock.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI, { APIUserAbortError } from 'openai';
import { describe, expect, test } from 'vitest';
import { createFetch, RateLimitedError } from '../../src/index.js';
import { estimateTokens, llm } from '../../src/llm/index.js';
import { modelKey } from '../../src/llm/llm.js';
import { tokenPacing } from '../../src/llm/tokens.js';
import { fakeClock, flush, until } from '../helpers/clock.js';
import { closeAfterEach } from '../helpers/teardown.js';
import {
  type Answer,
  completion,
  harness,
  held,
  json,
  message,
  named,
  noSecret,
  provider,
  SECRET,
} from './provider.js';

const open = closeAfterEach();

/** A chat body of about `tokens` input tokens (4 characters each). */
const chat = (tokens: number, extra: Record<string, unknown> = {}) => ({
  model: 'gpt-test',
  messages: [{ role: 'user' as const, content: 'x'.repeat(tokens * 4 - 8) }],
  ...extra,
});

/** OpenAI's tokens window: `remaining` left, reset in 20 s. */
const tokensLeft = (remaining: number): Answer =>
  json(200, completion(), {
    'x-ratelimit-limit-tokens': '10000',
    'x-ratelimit-remaining-tokens': String(remaining),
    'x-ratelimit-reset-tokens': '20s',
  });

/** The clock's sleeps that are holds: not an attempt's or the deadline's timer. */
const holds = (sleeps: readonly number[]) => sleeps.filter((ms) => ms !== 600_000 && ms !== 10_000);

const post = (body: unknown, signal?: AbortSignal): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', authorization: `Bearer ${SECRET}` },
  body: JSON.stringify(body),
  ...(signal !== undefined && { signal }),
});

describe('estimateTokens', () => {
  test('text characters ÷ 4, rounded up, plus the output cap', () => {
    // "user" (4) + "hello world!" (12) = 16 characters: 4 tokens.
    const body = {
      model: 'a-long-model-name',
      messages: [{ role: 'user', content: 'hello world!' }],
    };
    expect(estimateTokens(JSON.stringify(body))).toEqual({ input: 4, output: 0 });
    expect(estimateTokens(JSON.stringify({ ...body, max_tokens: 100 }))).toEqual({
      input: 4,
      output: 100,
    });
    expect(estimateTokens(JSON.stringify({ ...body, max_completion_tokens: 7, n: 3 }))).toEqual({
      input: 4,
      output: 21,
    });
    expect(estimateTokens(JSON.stringify({ input: 'abcde', max_output_tokens: 9 }))).toEqual({
      input: 2,
      output: 9,
    });
  });

  test('base64 media is not text', () => {
    const image = 'A'.repeat(40_000);
    const openai = {
      messages: [
        {
          role: 'user',
          content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${image}` } }],
        },
      ],
    };
    const anthropic = {
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: image } },
          ],
        },
      ],
    };
    expect(estimateTokens(JSON.stringify(openai))!.input).toBeLessThan(10);
    expect(estimateTokens(JSON.stringify(anthropic))!.input).toBeLessThan(20);
  });

  test.each(['', 'not json', '[1,2]', '{"a":', 'null'])('%j is not estimated', (body) => {
    expect(estimateTokens(body)).toBeUndefined();
  });

  test('llm.estimateTokens is a function or false', () => {
    expect(() => llm({ estimateTokens: 4 as never })).toThrow(
      new TypeError('llm.estimateTokens must be a function or false, got 4'),
    );
    expect(llm({ estimateTokens: false }).hold).toBeUndefined();
    expect(typeof llm().hold).toBe('function');
  });
});

describe('the tokens window holds a request that does not fit', () => {
  test('3,000 tokens with 1,000 left wait for the 20 s reset; a small one goes at once', async () => {
    const server = open.add(await provider([tokensLeft(1000), tokensLeft(800), tokensLeft(10000)]));
    const h = harness((clock) => llm({ clock }), false);
    await h.fetch(server.url, post(chat(10)));
    const big = h.fetch(server.url, post(chat(3000)));
    await until(() => holds(h.clock.remaining()).length > 0);
    expect(holds(h.clock.remaining())).toEqual([20_000]);
    await flush();
    expect(server.count).toBe(1);
    // A request that fits goes past the held one.
    expect((await h.fetch(server.url, post(chat(200)))).status).toBe(200);
    expect(server.count).toBe(2);
    await h.clock.advance(19_999);
    expect(server.count).toBe(2);
    await h.clock.advance(1);
    expect((await big).status).toBe(200);
    expect(server.count).toBe(3);
    expect(JSON.parse(server.received[2]!.body.toString()).messages[0].content).toHaveLength(
      11_992,
    );
    expect(named(h, 'wait')).toEqual([
      expect.objectContaining({ reason: 'rate-limit', duration: 20_000, attempt: 1 }),
    ]);
    noSecret(h);
  });

  test('the output cap counts: max_tokens past what is left waits', async () => {
    const server = open.add(await provider([tokensLeft(1000)]));
    const h = harness((clock) => llm({ clock }), false);
    await h.fetch(server.url, post(chat(10)));
    const capped = h.fetch(server.url, post(chat(10, { max_tokens: 2000 })));
    await until(() => holds(h.clock.remaining()).length > 0);
    expect(holds(h.clock.remaining())).toEqual([20_000]);
    await h.clock.advance(20_000);
    await capped;
    expect(server.count).toBe(2);
  });

  test('the estimates of requests in flight are counted', async () => {
    const slow = held(tokensLeft(400));
    const server = open.add(await provider([tokensLeft(1000), slow.answer, tokensLeft(9000)]));
    const h = harness((clock) => llm({ clock }), false);
    await h.fetch(server.url, post(chat(10)));
    const first = h.fetch(server.url, post(chat(600)));
    await until(slow.waiting);
    // 600 in flight + 300 ≤ 1000: goes. 600 + 600 > 1000: waits.
    const fits = h.fetch(server.url, post(chat(300)));
    const waits = h.fetch(server.url, post(chat(600)));
    await until(() => holds(h.clock.remaining()).length > 0);
    expect(holds(h.clock.remaining())).toEqual([20_000]);
    expect((await fits).status).toBe(200);
    expect(server.count).toBe(3);
    slow.release();
    await first;
    await h.clock.advance(20_000);
    expect((await waits).status).toBe(200);
    expect(server.count).toBe(4);
  });

  test('two requests admitted in the same tick do not both take the last tokens', async () => {
    const server = open.add(await provider([tokensLeft(1000), tokensLeft(9000)]));
    const h = harness((clock) => llm({ clock }), false);
    await h.fetch(server.url, post(chat(10)));
    const both = [h.fetch(server.url, post(chat(600))), h.fetch(server.url, post(chat(600)))];
    await until(() => holds(h.clock.remaining()).length > 0);
    await flush();
    expect(holds(h.clock.remaining())).toEqual([20_000]);
    expect(server.count).toBe(2);
    await h.clock.advance(20_000);
    await Promise.all(both);
    expect(server.count).toBe(3);
  });

  test("the caller's abort ends the wait; nothing is sent", async () => {
    const server = open.add(await provider([tokensLeft(1000)]));
    const h = harness((clock) => llm({ clock }), false);
    const openai = new OpenAI({
      apiKey: SECRET,
      baseURL: `${server.url}/v1`,
      fetch: h.fetch,
      maxRetries: 0,
    });
    await openai.chat.completions.create(chat(10));
    const controller = new AbortController();
    const call = openai.chat.completions
      .create(chat(3000), { signal: controller.signal })
      .catch((e: unknown) => e);
    await until(() => holds(h.clock.remaining()).length > 0);
    controller.abort();
    expect(await call).toBeInstanceOf(APIUserAbortError);
    expect(holds(h.clock.remaining())).toEqual([]);
    await flush();
    expect(server.count).toBe(1);
    noSecret(h);
  });

  test('a reset past the deadline fails fast with a RateLimitedError', async () => {
    const server = open.add(await provider([tokensLeft(1000)]));
    const h = harness((clock) => llm({ clock, timeout: { total: 10_000 } }), false);
    await h.fetch(server.url, post(chat(10)));
    const error = await h.fetch(server.url, post(chat(3000))).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitedError);
    expect((error as RateLimitedError).retryAfter).toBe(20_000);
    expect(String(error)).toContain('past the deadline (20000 ms)');
    expect(holds(h.clock.sleeps)).toEqual([]);
    expect(server.count).toBe(1);
    expect(named(h, 'giveUp')).toMatchObject([{ reason: 'rate-limited', attempts: 0 }]);
    noSecret(h, error);
  });

  test('a request larger than the whole window is sent: the provider decides', async () => {
    const server = open.add(await provider([tokensLeft(1000)]));
    const h = harness((clock) => llm({ clock }), false);
    await h.fetch(server.url, post(chat(10)));
    await h.fetch(server.url, post(chat(12_000)));
    expect(server.count).toBe(2);
    expect(holds(h.clock.sleeps)).toEqual([]);
  });

  test('a window already reset, another model, or estimateTokens: false hold nothing', async () => {
    const server = open.add(await provider([tokensLeft(1000)]));
    const h = harness((clock) => llm({ clock }), false);
    await h.fetch(server.url, post(chat(10)));
    await h.fetch(server.url, post({ ...chat(3000), model: 'other' }));
    expect(server.count).toBe(2);
    await h.clock.advance(20_000);
    await h.fetch(server.url, post(chat(3000)));
    expect(server.count).toBe(3);
    const off = harness((clock) => llm({ clock, estimateTokens: false }), false);
    await off.fetch(server.url, post(chat(10)));
    await off.fetch(server.url, post(chat(3000)));
    expect(server.count).toBe(5);
    expect(holds([...h.clock.sleeps, ...off.clock.sleeps])).toEqual([]);
  });

  test('a custom estimator is used; one that throws holds nothing', async () => {
    const server = open.add(await provider([tokensLeft(1000)]));
    const h = harness(
      (clock) => llm({ clock, estimateTokens: (body) => ({ input: body.length, output: 0 }) }),
      false,
    );
    await h.fetch(server.url, post(chat(10)));
    const held300 = h.fetch(server.url, post(chat(300))); // 1,200 characters: > 1000
    await until(() => holds(h.clock.remaining()).length > 0);
    expect(holds(h.clock.remaining())).toEqual([20_000]);
    await h.clock.advance(20_000);
    await held300;
    const boom = harness(
      (clock) =>
        llm({
          clock,
          estimateTokens: () => {
            throw new Error('no');
          },
        }),
      false,
    );
    await boom.fetch(server.url, post(chat(10)));
    await boom.fetch(server.url, post(chat(3000)));
    expect(server.count).toBe(4);
  });

  test('a hold hook of createFetch is validated', () => {
    expect(() => createFetch({ hold: 5 as never })).toThrow(
      new TypeError('hold must be a function, got 5'),
    );
  });
});

test('idle keys are forgotten past 1024; a key with a request in flight is kept', () => {
  const clock = fakeClock();
  const pacing = tokenPacing(estimateTokens, modelKey, clock);
  const ask = (model: string) =>
    pacing.hold(
      {
        method: 'POST',
        url: 'https://api.test',
        body: JSON.stringify({ model, input: 'hi' }),
        key: '',
      },
      clock.now(),
    );
  ask('kept');
  for (let i = 0; i < 1023; i++) ask(`m${i}`);
  expect(pacing.size()).toBe(1024);
  // The reservations made by hold lapse after CLAIM_MS; 'kept' is re-reserved just before.
  clock.advance(2000);
  ask('kept');
  ask('one more');
  expect(pacing.size()).toBe(2);
});

describe('@anthropic-ai/sdk: input and output tokens apart', () => {
  const reset = (now: number) => new Date(now + 12_000).toISOString();

  test('max_tokens past the output tokens left waits for their reset', async () => {
    let now = 0;
    const server = open.add(
      await provider([
        (res) =>
          json(200, message(), {
            'anthropic-ratelimit-input-tokens-limit': '40000',
            'anthropic-ratelimit-input-tokens-remaining': '39000',
            'anthropic-ratelimit-input-tokens-reset': reset(now),
            'anthropic-ratelimit-output-tokens-limit': '8000',
            'anthropic-ratelimit-output-tokens-remaining': '500',
            'anthropic-ratelimit-output-tokens-reset': reset(now),
          })(res),
      ]),
    );
    const h = harness((clock) => llm({ clock }), false);
    now = h.clock.now();
    const anthropic = new Anthropic({
      apiKey: SECRET,
      baseURL: server.url,
      fetch: h.fetch,
      maxRetries: 0,
    });
    const ask = (max: number) => ({
      model: 'claude-test',
      max_tokens: max,
      messages: [{ role: 'user' as const, content: 'hi' }],
    });
    await anthropic.messages.create(ask(64));
    await anthropic.messages.create(ask(400));
    expect(server.count).toBe(2);
    const big = anthropic.messages.create(ask(1000));
    await until(() => holds(h.clock.remaining()).length > 0);
    expect(holds(h.clock.remaining())).toEqual([12_000]);
    await flush();
    expect(server.count).toBe(2);
    await h.clock.advance(12_000);
    await big;
    expect(server.count).toBe(3);
    expect(named(h, 'wait')).toMatchObject([{ reason: 'rate-limit', duration: 12_000 }]);
    noSecret(h);
  });
});
