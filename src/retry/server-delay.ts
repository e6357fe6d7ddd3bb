/**
 * Server pacing: how long the server asked us to wait, from `retry-after-ms`,
 * `Retry-After`, `RateLimit` / `RateLimit-Reset` and `X-RateLimit-Reset`.
 * Strict parsers: anything malformed is ignored (→ `undefined`), never guessed.
 */
import { MAX_TIMER_MS } from '../internal/limits.js';
import {
  mostRestrictive,
  pacingPolicy,
  parseRateLimit,
  parseRateLimitPolicy,
} from './ratelimit-fields.js';

/** Anything headers can be read from: a `Headers`, or a plain record (any case). */
export type HeaderSource =
  | {
      get(name: string): string | null | undefined;
      /** Optional: {@link hasQuotaHeaders} in one pass of the source's own. */
      hasQuotaHeaders?(): boolean;
    }
  | Readonly<Record<string, string | readonly string[] | undefined>>;

/** Reads one header, case-insensitively, from a `Headers` or a record. */
export function readHeader(headers: HeaderSource, name: string): string | undefined {
  if (typeof (headers as { get?: unknown }).get === 'function') {
    const value = (headers as { get(name: string): unknown }).get(name);
    return typeof value === 'string' ? value : undefined;
  }
  const record = headers as Readonly<Record<string, unknown>>;
  const lower = name.toLowerCase();
  let value: unknown;
  if (Object.hasOwn(record, name)) value = record[name];
  else if (Object.hasOwn(record, lower)) value = record[lower];
  else {
    for (const key of Object.keys(record)) {
      if (key.toLowerCase() === lower) {
        value = record[key];
        break;
      }
    }
  }
  // node:http gives repeated headers as arrays; anything else that is not a string is no header.
  if (typeof value === 'string') return value;
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value.join(', ');
  return undefined;
}

/**
 * Where a delay hint came from, most precise first; `custom` is the client's
 * `pacing` option (a reader of headers the standard ones do not cover).
 */
export type PacingSource =
  | 'retry-after-ms'
  | 'retry-after'
  | 'ratelimit'
  | 'x-ratelimit-reset'
  | 'custom';

/** What the server said about pacing. */
export interface ServerPacing {
  /** Milliseconds to wait, ≥ 0 and finite; absent when no valid hint. */
  delay?: number;
  source?: PacingSource;
  /** Requests left in the current window, when a rate-limit header says so. */
  remaining?: number;
  /**
   * With `remaining: 0`: ms until the spent window resets, when it is known
   * apart from `delay` (a `pacing` option's reader gives it). Absent: the
   * reset is `delay`.
   */
  reset?: number;
  /**
   * The sustained rate, per second, at which the server says its window
   * refills (a `pacing` option's reader gives it, e.g. from an LLM
   * provider's limit, remaining and time-to-full reset). The adaptive rate
   * limiter never grows past it, and paces a spent quota at it.
   */
  rate?: number;
  /**
   * The quota of the response's `RateLimit-Policy` that paces: `quota`
   * requests per `window` seconds (the most restrictive policy counted in
   * requests, with a window of at most 300 s). The adaptive rate limiter
   * engages at once at a rate that keeps within it, and never exceeds it.
   */
  policy?: { quota: number; window: number };
  /**
   * With requests left (`remaining` > 0): ms until the current window
   * resets, as the standard headers tell it (`RateLimit` `t`,
   * `RateLimit-Reset`, `X-RateLimit-Reset`). The rate limiter pauses there
   * when it finds the window spent by the other clients before its count
   * says 0.
   */
  window?: number;
}

/**
 * A reader of pacing headers that the standard ones do not cover (a
 * provider's own family): what it finds fills what the standard headers left
 * out, never overrides them. See the `pacing` client option.
 */
export type PacingReader = (headers: HeaderSource, now: number) => ServerPacing | undefined;

/** How the executor reads a response's pacing: `learning` when a rate limiter listens. */
export type ResponsePacing = (
  headers: HeaderSource,
  status: number,
  now: number,
  learning: boolean,
) => ServerPacing | undefined;

function wait(value: unknown): number | undefined {
  return typeof value === 'number' && value >= 0 && Number.isFinite(value) ? value : undefined;
}

/** Calls `extra`, keeping only valid fields; a throwing reader reads nothing. */
function readExtra(extra: PacingReader, headers: HeaderSource, now: number): ServerPacing {
  let found: ServerPacing | undefined;
  try {
    found = extra(headers, now);
  } catch {
    return {};
  }
  if (typeof found !== 'object' || found === null) return {};
  const out: ServerPacing = {};
  const delay = wait(found.delay);
  const reset = wait(found.reset);
  const remaining = wait(found.remaining);
  if (delay !== undefined) out.delay = delay;
  if (reset !== undefined) out.reset = reset;
  if (remaining !== undefined && Number.isInteger(remaining)) out.remaining = remaining;
  const rate = wait(found.rate);
  if (rate !== undefined && rate > 0) out.rate = rate;
  return out;
}

/**
 * The executor's pacing reader: the standard headers on a failed status, or
 * on any response when a limiter learns and a quota header is present; with
 * `extra` (the `pacing` option), every response a limiter learns from is
 * also read by it, and its fields fill the gaps (`source: 'custom'`).
 */
export function responsePacing(extra?: PacingReader): ResponsePacing {
  if (extra === undefined) {
    return (headers, status, now, learning) =>
      status >= 400 || (learning && hasQuotaHeaders(headers))
        ? readServerPacing(headers, now)
        : undefined;
  }
  return (headers, status, now, learning) => {
    if (status < 400 && !learning) return undefined;
    const pacing = status >= 400 || hasQuotaHeaders(headers) ? readServerPacing(headers, now) : {};
    const more = readExtra(extra, headers, now);
    if (pacing.remaining === undefined && more.remaining !== undefined) {
      pacing.remaining = more.remaining;
    }
    if (more.reset !== undefined) pacing.reset = more.reset;
    if (more.rate !== undefined) pacing.rate = more.rate;
    if (pacing.delay === undefined && more.delay !== undefined) {
      pacing.delay = more.delay;
      pacing.source = 'custom';
    }
    return pacing;
  };
}

const OWS = /^[ \t]+|[ \t]+$/g;
const DIGITS = /^\d+$/;
const DECIMAL = /^\d+(?:\.\d+)?$/;
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const MONTH = MONTHS.join('|');
// RFC 9110 §5.6.7: IMF-fixdate, then the obsolete RFC 850 and asctime forms.
const IMF_FIXDATE = new RegExp(
  `^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), (\\d{2}) (${MONTH}) (\\d{4}) (\\d{2}):(\\d{2}):(\\d{2}) GMT$`,
);
const RFC850 = new RegExp(
  `^(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), (\\d{2})-(${MONTH})-(\\d{2}) (\\d{2}):(\\d{2}):(\\d{2}) GMT$`,
);
const ASCTIME = new RegExp(
  `^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (${MONTH}) ([ \\d]\\d) (\\d{2}):(\\d{2}):(\\d{2}) (\\d{4})$`,
);

function utc(year: number, month: string, day: number, h: number, m: number, s: number) {
  const mon = MONTHS.indexOf(month);
  if (h > 23 || m > 59 || s > 60 || day < 1) return undefined;
  const t = Date.UTC(year, mon, day, h, m);
  // Reject dates that Date.UTC would roll over (Feb 30 → Mar 2).
  if (new Date(t).getUTCDate() !== day) return undefined;
  // RFC 9110 §5.6.7 allows second 60 (a leap second): it ends where the next minute
  // starts, so :60 is read as that instant, never as :59 (a wait a second short).
  return t + s * 1000;
}

/** Parses an HTTP-date in any of the three forms of RFC 9110 §5.6.7 to epoch ms. */
export function parseHttpDate(value: string, now: number = Date.now()): number | undefined {
  let m = IMF_FIXDATE.exec(value);
  if (m) return utc(+m[3]!, m[2]!, +m[1]!, +m[4]!, +m[5]!, +m[6]!);
  m = RFC850.exec(value);
  if (m) {
    // RFC 9110 §5.6.7: a two-digit year that would be more than 50 years ahead is the
    // most recent past year with those digits, so the year is the latest one ending in
    // those digits that is at most 50 years ahead (in 2099, "00" is 2100, not 2000).
    const latest = new Date(now).getUTCFullYear() + 50;
    if (Number.isNaN(latest)) return undefined;
    const year = latest - ((((latest - +m[3]!) % 100) + 100) % 100);
    return utc(year, m[2]!, +m[1]!, +m[4]!, +m[5]!, +m[6]!);
  }
  m = ASCTIME.exec(value);
  if (m) return utc(+m[6]!, m[1]!, +m[2]!.trim(), +m[3]!, +m[4]!, +m[5]!);
  return undefined;
}

/**
 * A delay as a finite number of ms. Every parser accepts only digits, so an
 * infinite value can only come from a number too large for a double: that is a
 * very long wait (longer than any `maxRetryAfter`), not a missing hint.
 */
function bounded(ms: number): number | undefined {
  return Number.isNaN(ms) ? undefined : Math.min(ms, Number.MAX_VALUE);
}

/**
 * Parses a `Retry-After` value (RFC 9110 §10.2.3): delta-seconds (digits only)
 * or an HTTP-date. Returns ms from `now` (0 for a date in the past), or
 * `undefined` for anything else (`-5`, `1.5`, `0x10`, `120junk`, `""`).
 */
export function parseRetryAfter(
  value: string | null | undefined,
  now: number = Date.now(),
): number | undefined {
  if (value == null) return undefined;
  const v = value.replace(OWS, '');
  if (DIGITS.test(v)) return bounded(Number(v) * 1000);
  const date = parseHttpDate(v, now);
  return date === undefined ? undefined : bounded(Math.max(0, date - now));
}

/** `retry-after-ms` (OpenAI, Anthropic): a non-negative decimal number of ms, else `undefined`. */
export function parseRetryAfterMs(value: string | null | undefined): number | undefined {
  if (value == null) return undefined;
  const v = value.replace(OWS, '');
  return DECIMAL.test(v) ? bounded(Number(v)) : undefined;
}

function param(value: string, names: readonly string[]): number | undefined {
  for (const name of names) {
    const m = new RegExp(`(?:^|[;,\\s])${name}=(\\d+)(?=$|[;,\\s])`).exec(value);
    if (m) return Number(m[1]);
  }
  return undefined;
}

/** The `RateLimit` field's word: what is left and when it resets, each when said. */
interface DraftQuota {
  remaining?: number | undefined;
  reset?: number | undefined;
}

/**
 * Reads `RateLimit`: as the current draft's List of policies, the most
 * restrictive one speaking for the field; a value that is no List is read
 * as an earlier draft's `limit=…, remaining=…, reset=…` (or a `t=` beyond
 * what a structured Integer holds, still a very long wait, never none).
 */
function readRateLimit(value: string | undefined): DraftQuota {
  if (value === undefined) return {};
  const states = parseRateLimit(value);
  if (states === undefined) {
    return { remaining: param(value, ['r', 'remaining']), reset: param(value, ['t', 'reset']) };
  }
  const paces = mostRestrictive(states);
  return { remaining: paces?.remaining, reset: paces?.reset };
}

/** `X-RateLimit-Reset`: epoch ms, epoch seconds or delta seconds, told apart by magnitude. */
function parseReset(value: string | undefined, now: number): number | undefined {
  if (value === undefined) return undefined;
  const v = value.replace(OWS, '');
  if (!DECIMAL.test(v)) return undefined;
  const n = Number(v);
  if (n >= 1e12) return bounded(Math.max(0, n - now)); // epoch milliseconds
  if (n >= 1e9) return bounded(Math.max(0, n * 1000 - now)); // epoch seconds (after 2001)
  return bounded(n * 1000); // delta seconds
}

function count(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const v = value.replace(OWS, '');
  return DIGITS.test(v) ? Number(v) : undefined;
}

/** The names {@link hasQuotaHeaders} looks for, lowercase. */
const QUOTA_HEADERS: readonly string[] = [
  'ratelimit',
  'ratelimit-policy',
  'ratelimit-remaining',
  'x-ratelimit-remaining',
];

/** Whether a header name of `length` characters may be one of {@link QUOTA_HEADERS}. */
export function quotaNameLength(length: number): boolean {
  return length === 9 || length === 16 || length === 19 || length === 21;
}

/**
 * Whether `name` (any case) is one {@link hasQuotaHeaders} looks for. A
 * success usually carries none of them, so a name of another length is not
 * lowered (staunch/undici reads undici's raw names with the same two checks).
 */
export function isQuotaHeader(name: string): boolean {
  return quotaNameLength(name.length) && QUOTA_HEADERS.includes(name.toLowerCase());
}

/**
 * Whether a response carries a rate-limit header the limiter learns from
 * even on a success (`RateLimit`, `RateLimit-Policy`, `RateLimit-Remaining`,
 * `X-RateLimit-Remaining`): a quota at 0 with a reset says to pause before
 * any 429, a policy says the quota before the first one.
 */
export function hasQuotaHeaders(headers: HeaderSource): boolean {
  if (typeof (headers as { get?: unknown }).get !== 'function') {
    return hasQuotaRecord(headers as Readonly<Record<string, unknown>>);
  }
  const own = (headers as { hasQuotaHeaders?: () => boolean }).hasQuotaHeaders;
  if (own !== undefined) return own.call(headers);
  for (const name of QUOTA_HEADERS) if (readHeader(headers, name) !== undefined) return true;
  return false;
}

/**
 * {@link hasQuotaHeaders} for a plain record (undici's), in one pass over its
 * names: `readHeader` would scan every name once for each of the four.
 */
function hasQuotaRecord(record: Readonly<Record<string, unknown>>): boolean {
  for (const name of Object.keys(record)) {
    if (isQuotaHeader(name) && readHeader(record as HeaderSource, name) !== undefined) return true;
  }
  return false;
}

/**
 * Reads every pacing hint of a response. The most precise valid hint wins:
 * `retry-after-ms`, then `Retry-After`, then the `RateLimit` draft (`t=`, or
 * `reset=` / `RateLimit-Reset` of earlier drafts), then `X-RateLimit-Reset`.
 * Rate-limit reset times count as a delay only when the window is spent
 * (remaining 0) or the remaining count is not given. Of several `RateLimit`
 * policies, the one whose quota runs out first speaks (least `r`; of spent
 * ones, the latest `t`). Of `RateLimit-Policy`'s, the one that paces
 * (`pacingPolicy`: counted in requests, the least `q / w`) is `policy`.
 *
 * @see https://www.rfc-editor.org/rfc/rfc9110#section-10.2.3
 * @see https://datatracker.ietf.org/doc/draft-ietf-httpapi-ratelimit-headers/
 */
export function readServerPacing(headers: HeaderSource, now: number = Date.now()): ServerPacing {
  const pacing: ServerPacing = {};
  const ratelimit = readRateLimit(readHeader(headers, 'ratelimit'));
  const remaining =
    ratelimit.remaining ??
    count(readHeader(headers, 'ratelimit-remaining')) ??
    count(readHeader(headers, 'x-ratelimit-remaining'));
  if (remaining !== undefined) pacing.remaining = remaining;
  if (remaining !== undefined && remaining > 0) {
    const t = ratelimit.reset ?? count(readHeader(headers, 'ratelimit-reset'));
    const window =
      t === undefined
        ? parseReset(readHeader(headers, 'x-ratelimit-reset'), now)
        : bounded(t * 1000);
    if (window !== undefined) pacing.window = window;
  }
  const policyField = readHeader(headers, 'ratelimit-policy');
  const policies = policyField === undefined ? undefined : parseRateLimitPolicy(policyField);
  const policy = policies === undefined ? undefined : pacingPolicy(policies);
  if (policy !== undefined) pacing.policy = policy;

  const candidates: [PacingSource, () => number | undefined][] = [
    ['retry-after-ms', () => parseRetryAfterMs(readHeader(headers, 'retry-after-ms'))],
    ['retry-after', () => parseRetryAfter(readHeader(headers, 'retry-after'), now)],
  ];
  if (remaining === undefined || remaining === 0) {
    candidates.push(
      [
        'ratelimit',
        () => {
          const t = ratelimit.reset ?? count(readHeader(headers, 'ratelimit-reset'));
          return t === undefined ? undefined : bounded(t * 1000);
        },
      ],
      ['x-ratelimit-reset', () => parseReset(readHeader(headers, 'x-ratelimit-reset'), now)],
    );
  }
  for (const [source, read] of candidates) {
    const delay = read();
    if (delay !== undefined) {
      pacing.delay = delay;
      pacing.source = source;
      break;
    }
  }
  return pacing;
}

/** The largest delay a timer can schedule (2³¹ − 1 ms, about 24.8 days). */
export const MAX_DELAY: number = MAX_TIMER_MS;

/**
 * The server's requested delay in ms, clamped to [0, `cap`], or `undefined`
 * when the response carries no valid hint. Never throws.
 *
 * @param options.cap upper bound of the result. @default MAX_DELAY
 * @example parseServerDelay(response.headers) // 'Retry-After: 3' → 3000
 */
export function parseServerDelay(
  headers: HeaderSource,
  options: { now?: number; cap?: number } = {},
): number | undefined {
  const { now = Date.now(), cap = MAX_DELAY } = options;
  try {
    const { delay } = readServerPacing(headers, now);
    if (delay === undefined) return undefined;
    const clamped = Math.min(Math.max(delay, 0), cap);
    return Number.isFinite(clamped) ? clamped : undefined;
  } catch {
    return undefined;
  }
}
