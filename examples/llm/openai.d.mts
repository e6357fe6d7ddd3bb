import type { AzureOpenAI, default as OpenAI } from 'openai';
import type { StaunchListeners } from 'staunch';
import type { LlmOptions } from 'staunch/llm';

export function createClient(
  options?: { apiKey?: string; baseURL?: string; on?: StaunchListeners } & LlmOptions,
): OpenAI;
export function createAzureClient(options: {
  endpoint: string;
  apiKey: string;
  deployment: string;
  apiVersion: string;
  on?: StaunchListeners;
}): AzureOpenAI;
export function ask(client: OpenAI, question: string, model?: string): Promise<string>;
export function askStreaming(client: OpenAI, question: string, model?: string): Promise<string>;
