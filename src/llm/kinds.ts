/**
 * What an LLM provider's failed answer says about itself: a spent quota or
 * spending cap (never worth retrying), or which rate limit refused it
 * (requests or tokens per minute). Read from a bounded prefix of the error
 * body and from the pacing headers. Pure functions.
 *
 * The shapes, as the providers send them:
 * - OpenAI: `{"error":{"message":"…","type":"insufficient_quota","code":"insufficient_quota"}}`
 *   for a spent quota; `{"error":{"message":"Rate limit reached for gpt-4o … on
 *   tokens per min (TPM) …","type":"tokens","code":"rate_limit_exceeded"}}`
 *   for a rate limit, with `type` `requests` or `tokens`.
 * - Anthropic: `{"type":"error","error":{"type":"rate_limit_error","message":
 *   "This request would exceed … 20,000 input tokens per minute …"}}`;
 *   a monthly spend limit is the same type with `error.details.error_code`
 *   `enforced_spend_limit_reached` (no `retry-after`); `billing_error` for billing.
 */
import type { HeaderSource } from '../retry/server-delay.js';
import { type RateLimitDimension, readProviderRateLimits, spentWindow } from './headers.js';

/** The kinds said on the events for a 429 that is a rate limit. */
export type RateLimitKind = 'requests' | 'tokens' | 'input-tokens' | 'output-tokens';

/** What an error body says. */
export interface ErrorKind {
  /** A spent quota or spending cap: the provider's own code (`insufficient_quota`, `billing_error`…). */
  quota?: string;
  /** The rate limit that refused the request, when the body says. */
  limit?: RateLimitKind;
}

/** Codes and types that mean money, not rate: the same request fails again until someone pays. */
export const QUOTA_CODES: ReadonlySet<string> = new Set([
  'insufficient_quota',
  'billing_hard_limit_reached',
  'billing_not_active',
  'billing_error',
  'enforced_spend_limit_reached',
]);

const DIMENSION_KIND: Readonly<Record<RateLimitDimension, RateLimitKind>> = {
  requests: 'requests',
  tokens: 'tokens',
  inputTokens: 'input-tokens',
  outputTokens: 'output-tokens',
};

/** In a rate-limit message: "requests per min (RPM)", "input tokens per minute"… */
const LIMIT_WORDS = /\b(?:(input|output) )?(tokens|requests) per min/i;

/** Reads a JSON error body (or its first bytes); never throws. */
export function readErrorKind(text: string): ErrorKind {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return {};
  }
  const error = (body as { error?: unknown } | null)?.error;
  if (typeof error !== 'object' || error === null) return {};
  const { code, type, message, details } = error as {
    code?: unknown;
    type?: unknown;
    message?: unknown;
    details?: { error_code?: unknown } | null;
  };
  const detail = typeof details === 'object' && details !== null ? details.error_code : undefined;
  for (const k of [detail, code, type]) {
    if (typeof k === 'string' && QUOTA_CODES.has(k)) return { quota: k };
  }
  if (type === 'requests' || type === 'tokens') return { limit: type };
  if (typeof message === 'string') {
    const m = LIMIT_WORDS.exec(message);
    if (m !== null) {
      const what = m[2]!.toLowerCase();
      if (what === 'requests') return { limit: 'requests' };
      const side = m[1]?.toLowerCase();
      return { limit: side === undefined ? 'tokens' : (`${side}-tokens` as RateLimitKind) };
    }
  }
  return {};
}

/** The rate limit at 0 in the pacing headers, as a kind; `undefined` when none is spent. */
export function spentKind(headers: HeaderSource, now: number): RateLimitKind | undefined {
  const spent = spentWindow(readProviderRateLimits(headers, now));
  return spent === undefined ? undefined : DIMENSION_KIND[spent.dimension];
}

/** The `model` of a JSON request body, when it has a string one; never throws. */
export function modelOf(body: string | undefined): string | undefined {
  if (body === undefined || body.length === 0) return undefined;
  const first = body.trimStart()[0];
  if (first !== '{') return undefined;
  try {
    const model = (JSON.parse(body) as { model?: unknown }).model;
    return typeof model === 'string' && model !== '' ? model : undefined;
  } catch {
    return undefined;
  }
}
