#!/usr/bin/env node
/**
 * The Anthropic SDK over staunch: 529 overloaded retried, an overloaded
 * stream retried before its first event, pings not counted as progress.
 *
 *   npm run build && ANTHROPIC_API_KEY=sk-ant-… node examples/llm/anthropic.mjs
 */
import { fileURLToPath } from 'node:url';
import Anthropic from '@anthropic-ai/sdk';
import { createFetch } from 'staunch';
import { llm } from 'staunch/llm';

export function createClient({ apiKey, baseURL, on = {}, ...options } = {}) {
  const fetch = createFetch({ ...llm(options), on });
  // maxRetries: 0: staunch is the one retry layer (the SDK's would multiply its attempts).
  return new Anthropic({ apiKey, baseURL, fetch, maxRetries: 0 });
}

export async function ask(client, question, model = 'claude-sonnet-5-5') {
  const message = await client.messages.create({
    model,
    max_tokens: 256,
    messages: [{ role: 'user', content: question }],
  });
  return message.content.map((block) => (block.type === 'text' ? block.text : '')).join('');
}

export async function askStreaming(client, question, model = 'claude-sonnet-5-5') {
  const stream = client.messages.stream({
    model,
    max_tokens: 256,
    messages: [{ role: 'user', content: question }],
  });
  let text = '';
  stream.on('text', (delta) => {
    text += delta;
  });
  await stream.finalMessage();
  return text;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const client = createClient({
    apiKey: process.env.ANTHROPIC_API_KEY,
    on: { retry: (e) => console.error('retry', e.status ?? e.code, e.kind ?? '', e.delay) },
  });
  console.log(await askStreaming(client, 'Say hello in five words.'));
}
