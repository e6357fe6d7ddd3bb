#!/usr/bin/env node
/**
 * The OpenAI SDK over staunch: one retry layer (staunch's), provider pacing,
 * keys per model, deadlines for generation.
 *
 *   npm run build && OPENAI_API_KEY=sk-… node examples/llm/openai.mjs
 *
 * The same client works for Azure OpenAI and OpenAI-compatible gateways:
 * give `baseURL` (or use `AzureOpenAI` with the same `fetch`).
 */
import { fileURLToPath } from 'node:url';
import OpenAI, { AzureOpenAI } from 'openai';
import { createFetch } from 'staunch';
import { llm } from 'staunch/llm';

export function createClient({ apiKey, baseURL, on = {}, ...options } = {}) {
  const fetch = createFetch({ ...llm(options), on });
  // maxRetries: 0: staunch is the one retry layer (the SDK's would multiply its attempts).
  return new OpenAI({ apiKey, baseURL, fetch, maxRetries: 0 });
}

export function createAzureClient({ endpoint, apiKey, deployment, apiVersion, on = {} }) {
  // The same options: Azure sends OpenAI's error shapes, retry-after-ms, x-ratelimit-remaining-*.
  const fetch = createFetch({ ...llm(), on });
  return new AzureOpenAI({ endpoint, apiKey, deployment, apiVersion, fetch, maxRetries: 0 });
}

export async function ask(client, question, model = 'gpt-4o-mini') {
  const res = await client.chat.completions.create({
    model,
    messages: [{ role: 'user', content: question }],
  });
  return res.choices[0]?.message.content ?? '';
}

export async function askStreaming(client, question, model = 'gpt-4o-mini') {
  const stream = await client.chat.completions.create({
    model,
    messages: [{ role: 'user', content: question }],
    stream: true,
  });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
  return text;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const client = createClient({
    apiKey: process.env.OPENAI_API_KEY,
    on: { retry: (e) => console.error('retry', e.status ?? e.code, e.kind ?? '', e.delay) },
  });
  console.log(await ask(client, 'Say hello in five words.'));
}
