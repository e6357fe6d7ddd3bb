/**
 * examples/llm, run against the fake provider: the OpenAI and Anthropic
 * clients of the examples retry a 529 / 503 once (one request more at the
 * server, not the SDK's retries on top), and read a stream whose first
 * event was an error. The examples import `staunch` and `staunch/llm`,
 * which resolve here to the sources.
 */
import { describe, expect, test, vi } from 'vitest';
import * as anthropic from '../../examples/llm/anthropic.mjs';
import * as openai from '../../examples/llm/openai.mjs';
import { closeAfterEach } from '../helpers/teardown.js';
import { json, provider, SECRET, sse } from './provider.js';

vi.mock('staunch', () => import('../../src/index.js'));
vi.mock('staunch/llm', () => import('../../src/llm/index.js'));

const open = closeAfterEach();
// The examples run on the real clock: each failure says `retry-after-ms: 0`, so the retry
// leaves at once, and two attempts are all a test needs.
const noWait = { attempts: 2 };

const chunk = (content: string) => ({
  id: 'c',
  object: 'chat.completion.chunk',
  created: 1,
  model: 'm',
  choices: [{ index: 0, delta: { content }, finish_reason: null }],
});

describe('examples/llm/openai.mjs', () => {
  test('ask: a 503 retried once by staunch', async () => {
    const server = open.add(
      await provider([
        json(503, { error: { message: 'busy' } }, { 'retry-after-ms': '0' }),
        json(200, {
          id: 'x',
          object: 'chat.completion',
          created: 1,
          model: 'm',
          choices: [
            { index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' },
          ],
        }),
      ]),
    );
    const client = openai.createClient({ apiKey: SECRET, baseURL: `${server.url}/v1`, ...noWait });
    expect(await openai.ask(client, 'hello')).toBe('hi');
    expect(server.retryCounts).toEqual(['0', '1']);
  });

  test('askStreaming: an error first event retried', async () => {
    const server = open.add(
      await provider([
        sse([{ data: { error: { type: 'server_error', code: 'server_error', message: 'x' } } }], {
          'retry-after-ms': '0',
        }),
        sse([{ data: chunk('hel') }, { data: chunk('lo') }, { data: '[DONE]' }]),
      ]),
    );
    const client = openai.createClient({ apiKey: SECRET, baseURL: `${server.url}/v1`, ...noWait });
    expect(await openai.askStreaming(client, 'hello')).toBe('hello');
    expect(server.count).toBe(2);
  });
});

test('examples/llm/openai.mjs createAzureClient: a 429 retried, the api-key header in no event', async () => {
  const completion = {
    id: 'x',
    object: 'chat.completion',
    created: 1,
    model: 'm',
    choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
  };
  const server = open.add(
    await provider([
      json(429, { error: { type: 'requests' } }, { 'retry-after-ms': '0' }),
      json(200, completion),
    ]),
  );
  const events: unknown[] = [];
  const client = openai.createAzureClient({
    endpoint: server.url,
    apiKey: SECRET,
    deployment: 'my-gpt',
    apiVersion: '2024-10-21',
    on: { retry: (e: unknown) => events.push(e) },
  });
  expect(await openai.ask(client, 'hello', 'my-gpt')).toBe('hi');
  expect(server.count).toBe(2);
  expect(server.received[0]!.path).toContain('/deployments/my-gpt/');
  expect(server.received[0]!.headers['api-key']).toBe(SECRET);
  expect(events).toMatchObject([{ status: 429, kind: 'requests' }]);
  expect(JSON.stringify(events)).not.toContain(SECRET);
});

describe('examples/llm/anthropic.mjs', () => {
  const message = {
    id: 'msg',
    type: 'message',
    role: 'assistant',
    content: [{ type: 'text', text: 'hi' }],
    model: 'm',
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: 1, output_tokens: 1 },
  };
  const overloaded = { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } };

  test('ask: a 529 retried once by staunch', async () => {
    const server = open.add(
      await provider([json(529, overloaded, { 'retry-after-ms': '0' }), json(200, message)]),
    );
    const client = anthropic.createClient({ apiKey: SECRET, baseURL: server.url, ...noWait });
    expect(await anthropic.ask(client, 'hello')).toBe('hi');
    expect(server.retryCounts).toEqual(['0', '1']);
  });

  test('ask: the default model is one the installed SDK does not call deprecated', async () => {
    // The SDK warns (console.warn) when a request names a model past or near its end of
    // life; the example is what users copy, so its default must not draw that warning.
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      const server = open.add(await provider([json(200, message)]));
      const client = anthropic.createClient({ apiKey: SECRET, baseURL: server.url, ...noWait });
      expect(await anthropic.ask(client, 'hello')).toBe('hi');
      const sent = JSON.parse(String(server.received[0]?.body ?? '{}')) as { model?: string };
      expect(sent.model).toMatch(/^claude-/);
      const warnings = warn.mock.calls.map((args) => String(args[0]));
      expect(warnings.filter((w) => /deprecated/i.test(w))).toEqual([]);
    } finally {
      warn.mockRestore();
    }
  });

  test('askStreaming: an overloaded first event retried', async () => {
    const events = [
      {
        event: 'message_start',
        data: { type: 'message_start', message: { ...message, content: [] } },
      },
      {
        event: 'content_block_start',
        data: { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      },
      { event: 'ping', data: { type: 'ping' } },
      {
        event: 'content_block_delta',
        data: {
          type: 'content_block_delta',
          index: 0,
          delta: { type: 'text_delta', text: 'hello' },
        },
      },
      { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
      { event: 'message_stop', data: { type: 'message_stop' } },
    ];
    const server = open.add(
      await provider([
        sse([{ event: 'error', data: overloaded }], { 'retry-after-ms': '0' }),
        sse(events),
      ]),
    );
    const client = anthropic.createClient({ apiKey: SECRET, baseURL: server.url, ...noWait });
    expect(await anthropic.askStreaming(client, 'hello')).toBe('hello');
    expect(server.count).toBe(2);
  });
});
