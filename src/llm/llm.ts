/**
 * `llm()`: `createFetch` options for LLM APIs (OpenAI, Anthropic, Azure
 * OpenAI, OpenAI-compatible gateways), to hand an SDK whose own retries are
 * off. Only generic core hooks are used: `classify` (which statuses a POST
 * may retry, spent quotas, 429 kinds), `pacing` (the providers' rate-limit
 * headers), `hold` (tokens), `key` (per model), `retryCountHeader` (one
 * retry layer), and a wrapped transport (first stream event, 429 bodies,
 * idle streams, the tokens in flight).
 * See docs/llm.md.
 */
import type { FetchLike, StaunchOptions } from '../fetch.js';
import { type Clock, systemClock } from '../internal/clock.js';
import { checkNumber, checkObject, describe } from '../internal/validate.js';
import {
  checkClock,
  DEFAULT_METHODS,
  resolveTimeoutOptions,
  type TimeoutOptions,
} from '../options.js';
import { originKey, type PolicyRequest } from '../policy/policies.js';
import type { StatusClassifier } from '../retry/classify.js';
import { MAX_DELAY, type PacingReader, readHeader } from '../retry/server-delay.js';
import { readProviderRateLimits, refillRate, spentWindow } from './headers.js';
import { modelOf, spentKind } from './kinds.js';
import { estimateTokens, type TokenEstimator, tokenPacing } from './tokens.js';
import { providerTransport } from './transport.js';

/** Options of {@link llm}. Durations in ms. */
export interface LlmOptions {
  /** The transport under staunch. @default globalThis.fetch (looked up at each call) */
  fetch?: FetchLike;
  /** Total attempts, the first included. @default 3 */
  attempts?: number;
  /**
   * Deadlines: `attempt` until the response headers (for a stream, until its
   * first event), `total` for every attempt and wait.
   * @default { attempt: 600_000, total: 1_800_000 } (the SDKs' 10 minutes per attempt)
   */
  timeout?: TimeoutOptions;
  /** A stream that sends no event for this long fails (pings and comments do not count); `false`: never. @default 300_000 */
  idleTimeout?: number | false;
  /**
   * Also retry a POST that failed after it was sent, without a status (a
   * reset, an attempt timeout): the generation may have run, and be billed,
   * once per attempt. @default false
   */
  retryMaybeSent?: boolean;
  /** Breaker, budget and limiter state per origin and model (the JSON body's `model`); `false`: per origin. @default true */
  perModel?: boolean;
  /**
   * A request's tokens, from its string body, for holding it until the
   * provider's tokens window resets when it does not fit (docs/llm.md,
   * "Tokens"); `false`: tokens are not paced ahead.
   * @default {@link estimateTokens} (text characters ÷ 4, plus the output cap)
   */
  estimateTokens?: TokenEstimator | false;
  /**
   * How the provider's requests window refills. `'continuous'`: as OpenAI's
   * and Anthropic's, a token bucket whose stated reset is the time until it
   * is full again; the refill rate, `(limit − remaining) ÷ reset`, paces the
   * key, and a spent window holds the next request only until one fits.
   * `'at-reset'`: a gateway that counts fixed windows; a spent window holds
   * the key until the stated reset, and the rate is not learned from it
   * (docs/llm.md, "The requests window").
   * @default 'continuous'
   */
  refill?: 'continuous' | 'at-reset';
  /** Time source for the idle timeout, and for the client (passed on as `clock`). @default systemClock */
  clock?: Clock;
}

/** The statuses retried for a POST: each means the provider did not complete the call. */
export const LLM_STATUSES: readonly number[] = Object.freeze([
  408, 409, 429, 500, 502, 503, 504, 529,
]);

/** The header the OpenAI and Anthropic SDKs count their retries in. */
export const RETRY_COUNT_HEADER = 'x-stainless-retry-count';

export const LLM_TIMEOUT: Readonly<{ attempt: number; total: number }> = Object.freeze({
  attempt: 600_000,
  total: 1_800_000,
});
export const LLM_IDLE_TIMEOUT = 300_000;

const KEYS = [
  'fetch',
  'attempts',
  'timeout',
  'idleTimeout',
  'retryMaybeSent',
  'perModel',
  'estimateTokens',
  'refill',
  'clock',
] as const;

/** The longest model name a key is made of; a longer one keys on the origin alone. */
const MAX_MODEL = 200;

function checkBoolean(path: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') {
    throw new TypeError(`${path} must be a boolean, got ${describe(value)}`);
  }
  return value;
}

/** The policy key: the origin, plus `|model` when the JSON body names one. */
export function modelKey(request: PolicyRequest): string {
  const origin = originKey(request);
  const model = modelOf(request.body);
  return model === undefined || model.length > MAX_MODEL ? origin : `${origin}|${model}`;
}

/**
 * `createFetch` options tuned for LLM APIs: hand `createFetch(llm())` to an
 * SDK with `maxRetries: 0`. A plain object: spread it and override what you
 * need (`createFetch({ ...llm(), on: { retry } })`).
 *
 * @throws TypeError/RangeError naming the option and the value.
 * @example
 * // OpenAI: the openai package; createFetch: staunch; llm: staunch/llm
 * const openai = new OpenAI({ fetch: createFetch(llm()), maxRetries: 0 });
 */
export function llm(options: LlmOptions = {}): StaunchOptions {
  const o = checkObject('llm', options, KEYS) as LlmOptions;
  if (o.fetch !== undefined && typeof o.fetch !== 'function') {
    throw new TypeError(`llm.fetch must be a function, got ${describe(o.fetch)}`);
  }
  const attempts =
    o.attempts === undefined
      ? 3
      : checkNumber('llm.attempts', o.attempts, { min: 1, max: 100, integer: true });
  const timeout: TimeoutOptions = { ...LLM_TIMEOUT };
  if (o.timeout !== undefined) {
    if (typeof o.timeout !== 'object' || o.timeout === null) {
      throw new TypeError(`llm.timeout must be an object, got ${describe(o.timeout)}`);
    }
    resolveTimeoutOptions(o.timeout, undefined, 'llm.timeout');
    Object.assign(timeout, o.timeout);
  }
  const idle =
    o.idleTimeout === undefined
      ? LLM_IDLE_TIMEOUT
      : o.idleTimeout === false
        ? Number.POSITIVE_INFINITY
        : checkNumber('llm.idleTimeout', o.idleTimeout, {
            min: 0,
            exclusiveMin: true,
            max: MAX_DELAY,
          });
  const retryMaybeSent = checkBoolean('llm.retryMaybeSent', o.retryMaybeSent, false);
  const perModel = checkBoolean('llm.perModel', o.perModel, true);
  const estimator = o.estimateTokens ?? estimateTokens;
  if (estimator !== false && typeof estimator !== 'function') {
    throw new TypeError(
      `llm.estimateTokens must be a function or false, got ${describe(o.estimateTokens)}`,
    );
  }
  const refill = o.refill ?? 'continuous';
  if (refill !== 'continuous' && refill !== 'at-reset') {
    throw new TypeError(`llm.refill must be 'continuous' or 'at-reset', got ${describe(o.refill)}`);
  }
  let clock: Clock | undefined;
  try {
    clock = checkClock(o.clock);
  } catch {
    throw new TypeError(
      `llm.clock must have now() and sleep(ms, signal), got ${describe(o.clock)}`,
    );
  }

  const base: FetchLike = o.fetch ?? ((input, init) => globalThis.fetch(input, init));
  const time = clock ?? systemClock;
  const transport = providerTransport(base, idle, time);
  const tokens =
    estimator === false ? undefined : tokenPacing(estimator, perModel ? modelKey : originKey, time);

  const classify: StatusClassifier = ({ status, headers, scope }) => {
    const said = status === 429 ? transport.kindOf(headers) : undefined;
    let kind: string | undefined;
    if (status === 429) {
      kind = said?.quota ?? said?.limit ?? spentKind(headers, time.now()) ?? 'rate-limit';
    } else if (status === 529) kind = 'overloaded';
    // The provider's x-should-retry wins either way (the table already read it).
    const should = readHeader(headers, 'x-should-retry');
    if (should === 'true' || should === 'false') return { kind };
    if (said?.quota !== undefined) return { scope: 'never', kind };
    // A status in LLM_STATUSES: the provider did not complete the call, so a POST may retry it.
    return { scope: scope === 'replayable' ? 'any' : scope, kind };
  };

  const pacing: PacingReader = (headers, now) => {
    const limits = readProviderRateLimits(headers, now);
    const rate = refill === 'continuous' ? refillRate(limits.requests) : undefined;
    const stated = rate === undefined ? {} : { rate };
    const spent = spentWindow(limits);
    if (spent !== undefined) {
      return { remaining: 0, reset: spent.reset, delay: spent.reset, ...stated };
    }
    const remaining = limits.requests?.remaining;
    return remaining === undefined ? undefined : { remaining, ...stated };
  };

  const methods = retryMaybeSent ? [...DEFAULT_METHODS, 'POST'] : [...DEFAULT_METHODS];
  return {
    fetch: tokens === undefined ? transport.fetch : tokens.track(transport.fetch),
    ...(tokens !== undefined && { hold: tokens.hold }),
    retry: { attempts, methods, statuses: [...LLM_STATUSES] },
    timeout,
    retryCountHeader: RETRY_COUNT_HEADER,
    classify,
    pacing,
    ...(perModel && { key: modelKey }),
    ...(clock !== undefined && { clock }),
  };
}
