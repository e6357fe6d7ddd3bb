/**
 * Tokens paced before any 429: a request's size estimated from its JSON
 * body, held (the core's `hold` hook) until the provider's tokens window
 * resets when the estimate does not fit in what the last response said is
 * left, minus the estimates of the requests still in flight on the key.
 *
 * The state per key is the token windows of the latest-sent request whose
 * response came back, and the requests admitted since: a request admitted
 * by the hook is reserved at once (so two requests admitted in the same tick
 * cannot both take the last tokens) and claimed by the transport when it is
 * sent; its reservation ends with its response headers, whose counts then
 * include it. A reservation the transport never claims (a later gate refused
 * the attempt) lapses after {@link CLAIM_MS}.
 */
import type { FetchLike } from '../fetch.js';
import type { Clock } from '../internal/clock.js';
import type { HoldHook, PolicyRequest } from '../policy/policies.js';
import { type RateLimitDimension, readProviderRateLimits } from './headers.js';

/** A request's estimated size, in tokens. */
export interface TokenEstimate {
  /** The prompt: its text's characters ÷ 4, rounded up. */
  readonly input: number;
  /** The most it may generate: `max_tokens`, `max_completion_tokens` or `max_output_tokens` (× `n`); 0 when none. */
  readonly output: number;
}

/** Estimates a request's tokens from its string body; `undefined`: not estimated (never held). */
export type TokenEstimator = (body: string) => TokenEstimate | undefined;

/** ms an admitted request has to reach the transport before its reservation lapses. */
export const CLAIM_MS = 1000;

/** Characters per token of the estimate (the providers' own rule of thumb for English). */
export const CHARS_PER_TOKEN = 4;

const OUTPUT_FIELDS = ['max_tokens', 'max_completion_tokens', 'max_output_tokens'] as const;

const count = (v: unknown): number | undefined =>
  typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : undefined;

/** Characters of the text in `value`: every string but `data` fields and `data:` URLs (base64 media). */
function textLength(value: unknown, depth: number): number {
  if (typeof value === 'string') return value.startsWith('data:') ? 0 : value.length;
  if (typeof value !== 'object' || value === null || depth > 64) return 0;
  let n = 0;
  if (Array.isArray(value)) {
    for (const item of value) n += textLength(item, depth + 1);
    return n;
  }
  for (const [name, item] of Object.entries(value)) {
    if (name !== 'data') n += textLength(item, depth + 1);
  }
  return n;
}

/**
 * The default estimate of {@link TokenEstimator}: a JSON object body's text
 * (every string value but `model`, `data` fields and `data:` URLs) ÷ 4,
 * rounded up, as input; the body's output cap (`max_tokens`,
 * `max_completion_tokens`, `max_output_tokens`, times `n` when above 1) as
 * output. A body that is not a JSON object is not estimated.
 */
export function estimateTokens(body: string): TokenEstimate | undefined {
  if (body.trimStart()[0] !== '{') return undefined;
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(body) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return undefined;
  const { model: _model, ...rest } = parsed;
  const input = Math.ceil(textLength(rest, 0) / CHARS_PER_TOKEN);
  let output = 0;
  for (const field of OUTPUT_FIELDS) {
    const cap = count(parsed[field]);
    if (cap !== undefined) {
      output = cap;
      break;
    }
  }
  const n = count(parsed.n);
  if (n !== undefined && n > 1) output *= n;
  return { input, output };
}

type TokenDimension = Exclude<RateLimitDimension, 'requests'>;
const TOKEN_DIMENSIONS: readonly TokenDimension[] = ['tokens', 'inputTokens', 'outputTokens'];

/** What a request costs in one window: Anthropic counts input and output apart, `tokens` both. */
function cost(e: TokenEstimate, dimension: TokenDimension): number {
  return dimension === 'inputTokens'
    ? e.input
    : dimension === 'outputTokens'
      ? e.output
      : e.input + e.output;
}

interface TokenWindow {
  readonly remaining: number;
  readonly limit: number | undefined;
  /** Clock time of the reset. */
  readonly until: number;
}

interface Flight {
  readonly seq: number;
  readonly estimate: TokenEstimate;
  /** Clock time it was admitted. */
  readonly at: number;
  claimed: boolean;
}

interface KeyTokens {
  /** The seq of the request whose response set `windows`. */
  seen: number;
  windows: Partial<Record<TokenDimension, TokenWindow>>;
  readonly flights: Flight[];
}

export interface TokenPacing {
  /** The core's `hold` hook. */
  readonly hold: HoldHook;
  /** Wraps the transport: claims reservations, reads the windows off each response. */
  readonly track: (transport: FetchLike) => FetchLike;
  /** Keys with state (a bound: idle ones are forgotten past 1024). */
  readonly size: () => number;
}

/** Token pacing per key; `keyOf` must be the key the `hold` hook's request is given. */
export function tokenPacing(
  estimate: TokenEstimator,
  keyOf: (request: PolicyRequest) => string,
  clock: Clock,
): TokenPacing {
  const keys = new Map<string, KeyTokens>();
  let seq = 0;
  // The hook and the transport see the same body string: estimate it once.
  let last: { body: string; estimate: TokenEstimate | undefined } | undefined;
  const estimateOf = (body: string | undefined): TokenEstimate | undefined => {
    if (body === undefined || body.length === 0) return undefined;
    if (last?.body !== body) {
      let e: TokenEstimate | undefined;
      try {
        e = estimate(body);
      } catch {
        e = undefined;
      }
      const valid =
        e !== undefined && count(e.input) !== undefined && count(e.output) !== undefined;
      last = { body, estimate: valid ? { input: e!.input, output: e!.output } : undefined };
    }
    return last.estimate;
  };
  const stateOf = (key: string): KeyTokens => {
    let state = keys.get(key);
    if (state === undefined) {
      if (keys.size >= MAX_KEYS) forgetIdle(keys, clock.now());
      state = { seen: 0, windows: {}, flights: [] };
      keys.set(key, state);
    }
    return state;
  };
  /** The estimates in flight since the windows were seen. */
  const inFlight = (state: KeyTokens, dimension: TokenDimension): number => {
    let sum = 0;
    for (const f of state.flights) if (f.seq > state.seen) sum += cost(f.estimate, dimension);
    return sum;
  };

  const hold: HoldHook = (request, now) => {
    const e = estimateOf(request.body);
    if (e === undefined) return 0;
    const state = stateOf(keyOf(request));
    dropLapsed(state, now);
    let wait = 0;
    for (const dimension of TOKEN_DIMENSIONS) {
      const w = state.windows[dimension];
      if (w === undefined || now >= w.until) continue;
      const need = cost(e, dimension);
      // A request larger than the whole window never fits: the provider decides.
      if (need === 0 || (w.limit !== undefined && need > w.limit)) continue;
      if (need + inFlight(state, dimension) > w.remaining) wait = Math.max(wait, w.until - now);
    }
    if (wait > 0) return wait;
    state.flights.push({ seq: ++seq, estimate: e, at: now, claimed: false });
    return 0;
  };

  const track =
    (transport: FetchLike): FetchLike =>
    async (input, init) => {
      const url = input;
      const body = typeof init?.body === 'string' ? init.body : undefined;
      const e = estimateOf(body);
      if (e === undefined) return transport(input, init);
      const method = (init?.method ?? 'GET').toUpperCase();
      const state = stateOf(keyOf({ method, url, body }));
      let flight = state.flights.find(
        (f) => !f.claimed && f.estimate.input === e.input && f.estimate.output === e.output,
      );
      if (flight === undefined) {
        flight = { seq: ++seq, estimate: e, at: clock.now(), claimed: true };
        state.flights.push(flight);
      }
      flight.claimed = true;
      try {
        const response = await transport(input, init);
        if (flight.seq > state.seen) {
          state.seen = flight.seq;
          state.windows = windowsOf(response.headers, clock.now());
        }
        return response;
      } finally {
        const i = state.flights.indexOf(flight);
        if (i >= 0) state.flights.splice(i, 1);
      }
    };
  return { hold, track, size: () => keys.size };
}

/** Keys kept before the idle ones (nothing in flight, every window reset) are forgotten. */
const MAX_KEYS = 1024;

/** Drops the reservations the transport did not claim within {@link CLAIM_MS}. */
function dropLapsed(state: KeyTokens, now: number): void {
  for (let i = state.flights.length - 1; i >= 0; i--) {
    const f = state.flights[i]!;
    if (!f.claimed && now - f.at >= CLAIM_MS) state.flights.splice(i, 1);
  }
}

function forgetIdle(keys: Map<string, KeyTokens>, now: number): void {
  for (const [key, state] of keys) {
    dropLapsed(state, now);
    const live = Object.values(state.windows).some((w) => w !== undefined && w.until > now);
    if (state.flights.length === 0 && !live) keys.delete(key);
  }
}

/** The token windows a response states: remaining and a reset, per dimension. */
function windowsOf(headers: Headers, now: number): KeyTokens['windows'] {
  const limits = readProviderRateLimits(headers, now);
  const windows: KeyTokens['windows'] = {};
  for (const dimension of TOKEN_DIMENSIONS) {
    const w = limits[dimension];
    if (w?.remaining === undefined || w.reset === undefined || w.reset <= 0) continue;
    windows[dimension] = { remaining: w.remaining, limit: w.limit, until: now + w.reset };
  }
  return windows;
}
