import type Anthropic from '@anthropic-ai/sdk';
import type { StaunchListeners } from 'staunch';
import type { LlmOptions } from 'staunch/llm';

export function createClient(
  options?: { apiKey?: string; baseURL?: string; on?: StaunchListeners } & LlmOptions,
): Anthropic;
export function ask(client: Anthropic, question: string, model?: string): Promise<string>;
export function askStreaming(client: Anthropic, question: string, model?: string): Promise<string>;
