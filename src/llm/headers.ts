/**
 * The LLM providers' pacing headers, parsed. Pure functions; `llm()`'s
 * `pacing` reader (./llm.ts) feeds them to the rate limiter.
 *
 * - OpenAI (and most OpenAI-compatible gateways):
 *   `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`, resets as Go
 *   durations (`1s`, `6m0s`, `20ms`, `8.64s`, `1h2m3.5s`).
 * - Anthropic: `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,remaining,reset}`,
 *   resets as RFC 3339 timestamps.
 * - Both: `retry-after-ms` (then `Retry-After`) on a 429 or 529.
 *
 * Strict, like src/retry/server-delay.ts: a malformed value is ignored
 * (`undefined`), never guessed, and nothing here throws or returns NaN.
 *
 * @see https://platform.openai.com/docs/guides/rate-limits
 * @see https://docs.anthropic.com/en/api/rate-limits
 */
import {
  type HeaderSource,
  parseRetryAfter,
  parseRetryAfterMs,
  readHeader,
} from '../retry/server-delay.js';

/** One rate-limit window of a provider. */
export interface RateLimitWindow {
  /** The most allowed in the window. */
  limit?: number;
  /** What is left in the window. */
  remaining?: number;
  /** Milliseconds until the window is replenished (rounded up; 0 if already). */
  reset?: number;
}

/** What a provider limits: requests, tokens, and (Anthropic) input and output tokens apart. */
export type RateLimitDimension = 'requests' | 'tokens' | 'inputTokens' | 'outputTokens';

/** Every pacing hint of a provider's response. */
export type ProviderRateLimits = { [D in RateLimitDimension]?: RateLimitWindow } & {
  /** Milliseconds the provider asked to wait: `retry-after-ms`, else `Retry-After`. */
  retryAfter?: number;
};

const DIMENSIONS: readonly [RateLimitDimension, string][] = [
  ['requests', 'requests'],
  ['tokens', 'tokens'],
  ['inputTokens', 'input-tokens'],
  ['outputTokens', 'output-tokens'],
];

const OWS = /^[ \t]+|[ \t]+$/g;
const DIGITS = /^\d+$/;
const DECIMAL = /^\d+(?:\.\d+)?$/;
const GO_DURATION = /^[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+$/;
const GO_PART = /(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)/g;
const UNIT_MS: Readonly<Record<string, number>> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  μs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};
const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

/** Whole ms, rounded up, from a sum of float parts (8.64 s is 8640, not 8641). */
function wholeMs(ms: number): number | undefined {
  if (!Number.isFinite(ms)) return undefined;
  return Math.ceil(Math.round(ms * 1e6) / 1e6);
}

/**
 * A Go `time.Duration` string (what OpenAI sends in `x-ratelimit-reset-*`)
 * in ms, rounded up to a whole ms: `6m0s` → 360000, `20ms` → 20, `8.64s` →
 * 8640, `1h2m3.5s` → 3723500, `0` → 0. A negative duration (a reset already
 * past) is 0. Anything else, or a value too large for Go (about 292 years),
 * is `undefined`.
 */
export function parseGoDuration(value: string | null | undefined): number | undefined {
  if (typeof value !== 'string') return undefined;
  const v = value.replace(OWS, '');
  if (v === '0' || v === '+0' || v === '-0') return 0;
  if (!GO_DURATION.test(v)) return undefined;
  let total = 0;
  for (const m of v.matchAll(GO_PART)) total += Number(m[1]) * UNIT_MS[m[2]!]!;
  // Go's Duration is an int64 of nanoseconds.
  if (total * 1e6 > 9.223372036854775e18) return undefined;
  if (v.startsWith('-')) return 0;
  return wholeMs(total);
}

/** An RFC 3339 timestamp (`2026-12-01T10:00:30.5Z`, `…+02:00`) as epoch ms, else `undefined`. */
export function parseRfc3339(value: string | null | undefined): number | undefined {
  if (typeof value !== 'string') return undefined;
  const m = RFC3339.exec(value.replace(OWS, ''));
  if (!m) return undefined;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 60) {
    return undefined;
  }
  let offset = 0;
  if (m[8] === undefined) {
    const oh = Number(m[10]);
    const om = Number(m[11]);
    if (oh > 23 || om > 59) return undefined;
    offset = (m[9] === '-' ? -1 : 1) * (oh * 60 + om) * 60_000;
  }
  // RFC 3339 §5.7 allows a leap second (:60); Date cannot hold it, so it is :59.
  const t = Date.UTC(year, month - 1, day, hour, minute, Math.min(second, 59));
  if (new Date(t).getUTCDate() !== day) return undefined; // Feb 30 and the like
  const fraction = m[7] === undefined ? 0 : Number(`0${m[7]}`) * 1000;
  return t + fraction - offset;
}

/**
 * A reset value in ms from `now`: an RFC 3339 timestamp (Anthropic), a Go
 * duration (OpenAI), or a bare number of seconds (gateways that send one;
 * epoch seconds or ms told apart by magnitude, as for `X-RateLimit-Reset`).
 */
export function parseResetValue(
  value: string | null | undefined,
  now: number = Date.now(),
): number | undefined {
  if (typeof value !== 'string') return undefined;
  const v = value.replace(OWS, '');
  const at = parseRfc3339(v);
  if (at !== undefined) return Number.isFinite(now) ? wholeMs(Math.max(0, at - now)) : undefined;
  if (DECIMAL.test(v)) {
    const n = Number(v);
    if (n >= 1e12) return Number.isFinite(now) ? wholeMs(Math.max(0, n - now)) : undefined;
    if (n >= 1e9) return Number.isFinite(now) ? wholeMs(Math.max(0, n * 1000 - now)) : undefined;
    return wholeMs(n * 1000);
  }
  return parseGoDuration(v);
}

function count(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const v = value.replace(OWS, '');
  if (!DIGITS.test(v)) return undefined;
  const n = Number(v);
  return Number.isFinite(n) ? n : undefined;
}

function window(
  headers: HeaderSource,
  names: { limit: string; remaining: string; reset: string },
  now: number,
): RateLimitWindow | undefined {
  const w: RateLimitWindow = {};
  const limit = count(readHeader(headers, names.limit));
  const remaining = count(readHeader(headers, names.remaining));
  const reset = parseResetValue(readHeader(headers, names.reset), now);
  if (limit !== undefined) w.limit = limit;
  if (remaining !== undefined) w.remaining = remaining;
  if (reset !== undefined) w.reset = reset;
  return limit === undefined && remaining === undefined && reset === undefined ? undefined : w;
}

/**
 * Reads the rate-limit headers of an OpenAI, Anthropic or OpenAI-compatible
 * response: per dimension, the limit, what remains and the ms until the
 * reset, each present only when its header is valid. Where both families
 * are present, Anthropic's value wins field by field. Never throws.
 *
 * @example
 * readProviderRateLimits(res.headers)
 * // x-ratelimit-remaining-requests: 0, x-ratelimit-reset-requests: 6m0s
 * // → { requests: { remaining: 0, reset: 360000 } }
 */
export function readProviderRateLimits(
  headers: HeaderSource,
  now: number = Date.now(),
): ProviderRateLimits {
  const limits: ProviderRateLimits = {};
  try {
    for (const [dimension, name] of DIMENSIONS) {
      const anthropic = window(
        headers,
        {
          limit: `anthropic-ratelimit-${name}-limit`,
          remaining: `anthropic-ratelimit-${name}-remaining`,
          reset: `anthropic-ratelimit-${name}-reset`,
        },
        now,
      );
      const openai =
        dimension === 'requests' || dimension === 'tokens'
          ? window(
              headers,
              {
                limit: `x-ratelimit-limit-${name}`,
                remaining: `x-ratelimit-remaining-${name}`,
                reset: `x-ratelimit-reset-${name}`,
              },
              now,
            )
          : undefined;
      if (anthropic !== undefined || openai !== undefined) {
        limits[dimension] = { ...openai, ...anthropic };
      }
    }
    const retryAfter =
      parseRetryAfterMs(readHeader(headers, 'retry-after-ms')) ??
      parseRetryAfter(readHeader(headers, 'retry-after'), now);
    if (retryAfter !== undefined && Number.isFinite(retryAfter)) {
      limits.retryAfter = Math.ceil(retryAfter);
    }
  } catch {
    // A throwing Headers getter: what was read so far stands.
  }
  return limits;
}

/**
 * The spent window that holds longest: a dimension with `remaining: 0` and a
 * reset, the longest reset first. `undefined` when nothing is spent.
 */
export function spentWindow(
  limits: ProviderRateLimits,
): { dimension: RateLimitDimension; reset: number } | undefined {
  let spent: { dimension: RateLimitDimension; reset: number } | undefined;
  for (const [dimension] of DIMENSIONS) {
    const w = limits[dimension];
    if (w?.remaining !== 0 || w.reset === undefined) continue;
    if (spent === undefined || w.reset > spent.reset) spent = { dimension, reset: w.reset };
  }
  return spent;
}

/**
 * The rate, per second, at which a window refills, from one response: both
 * providers state the reset as the time until the window is *full* again
 * and refill it continuously, so `(limit − remaining)` requests come back
 * over `reset` ms. `undefined` when the window is full (nothing to measure),
 * the reset is 0, or a field is missing. A reset rounded up (OpenAI's Go
 * durations to the ms, Anthropic's timestamps to the second) understates
 * the rate, never overstates it.
 */
export function refillRate(window: RateLimitWindow | undefined): number | undefined {
  if (window === undefined) return undefined;
  const { limit, remaining, reset } = window;
  if (limit === undefined || remaining === undefined || reset === undefined) return undefined;
  if (!(reset > 0) || !(limit > remaining)) return undefined;
  return ((limit - remaining) * 1000) / reset;
}
