/**
 * staunch/llm: `createFetch` options for LLM APIs (OpenAI, Anthropic, Azure
 * OpenAI, OpenAI-compatible gateways), and the parsers of the providers'
 * pacing headers. No runtime dependency and no `node:` import.
 */
export type { ProviderRateLimits, RateLimitDimension, RateLimitWindow } from './headers.js';
export {
  parseGoDuration,
  parseResetValue,
  parseRfc3339,
  readProviderRateLimits,
  spentWindow,
} from './headers.js';
export type { ErrorKind, RateLimitKind } from './kinds.js';
export { QUOTA_CODES, readErrorKind } from './kinds.js';
export type { LlmOptions } from './llm.js';
export { LLM_STATUSES, llm, modelKey, RETRY_COUNT_HEADER } from './llm.js';
export type { TokenEstimate, TokenEstimator } from './tokens.js';
export { estimateTokens } from './tokens.js';
