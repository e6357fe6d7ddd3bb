/**
 * The `RateLimit` and `RateLimit-Policy` fields of the IETF draft
 * (draft-ietf-httpapi-ratelimit-headers): RFC 9651 Lists of named policies.
 * `RateLimit: "default";r=50;t=30` says what is left of a policy's quota;
 * `RateLimit-Policy: "burst";q=100;w=60,"daily";q=1000;w=86400` says what
 * each quota is. A malformed field is ignored whole; a policy whose known
 * parameter has the wrong type or a negative value is ignored alone; unknown
 * parameters are ignored.
 *
 * @see https://datatracker.ietf.org/doc/draft-ietf-httpapi-ratelimit-headers/
 */
import { type BareItem, type ListMember, parseStructuredList } from './structured-list.js';

/** One policy's state, from the `RateLimit` field. */
export interface RateLimitState {
  /** The policy's name (a String, or a Token from a lenient server). */
  policy: string;
  /** `r`: quota units left in the current window. */
  remaining?: number;
  /** `t`: seconds until the window's quota is restored. */
  reset?: number;
  /** `pk`: the partition the quota applies to, as the server's bytes. */
  partitionKey?: Uint8Array;
}

/** One policy's definition, from the `RateLimit-Policy` field. */
export interface RateLimitPolicy {
  /** The policy's name (a String, or a Token from a lenient server). */
  policy: string;
  /** `q`: the quota, in {@link RateLimitPolicy.unit}s per window. */
  quota: number;
  /** `w`: the window, in seconds. */
  window?: number;
  /**
   * `qu`: what the quota counts. The draft's values are `requests` (its
   * default), `content-bytes` and `concurrent-requests`; another is kept as sent.
   * @default 'requests'
   */
  unit: string;
  /** `pk`: the partition the quota applies to, as the server's bytes. */
  partitionKey?: Uint8Array;
}

/** Marks a policy whose known parameter is unusable: the policy is dropped. */
const BAD = Symbol('bad');

function name(member: ListMember): string | undefined {
  const item = member.item;
  return item?.type === 'string' || item?.type === 'token' ? item.value : undefined;
}

/** A non-negative Integer parameter; absent → `undefined`; anything else → {@link BAD}. */
function count(item: BareItem | undefined): number | undefined | typeof BAD {
  if (item === undefined) return undefined;
  return item.type === 'integer' && item.value >= 0 ? item.value : BAD;
}

function bytes(item: BareItem | undefined): Uint8Array | undefined | typeof BAD {
  if (item === undefined) return undefined;
  return item.type === 'bytes' ? item.value : BAD;
}

/**
 * The valid policies of a List field, in field order: `read` gives a
 * member's policy, or `undefined` to drop that member alone. The whole
 * field is `undefined` when it is not a valid List.
 */
function policies<T>(
  value: string,
  read: (params: ListMember['params'], policy: string) => T | undefined,
): T[] | undefined {
  const members = parseStructuredList(value);
  if (members === undefined) return undefined;
  const out: T[] = [];
  for (const member of members) {
    const policy = name(member);
    const entry = policy === undefined ? undefined : read(member.params, policy);
    if (entry !== undefined) out.push(entry);
  }
  return out;
}

/**
 * Reads a `RateLimit` field value: every valid policy, in field order, or
 * `undefined` when the field is not a valid List (then nothing in it is read).
 * Never throws.
 */
export function parseRateLimit(value: string): RateLimitState[] | undefined {
  return policies(value, (params, policy) => {
    const remaining = count(params.get('r'));
    const reset = count(params.get('t'));
    const partitionKey = bytes(params.get('pk'));
    if (remaining === BAD || reset === BAD || partitionKey === BAD) return undefined;
    const state: RateLimitState = { policy };
    if (remaining !== undefined) state.remaining = remaining;
    if (reset !== undefined) state.reset = reset;
    if (partitionKey !== undefined) state.partitionKey = partitionKey;
    return state;
  });
}

/**
 * Reads a `RateLimit-Policy` field value: every valid policy (one with a
 * quota `q`), in field order, or `undefined` when the field is not a valid
 * List. Never throws.
 */
export function parseRateLimitPolicy(value: string): RateLimitPolicy[] | undefined {
  return policies(value, (params, policy) => {
    const quota = count(params.get('q'));
    const window = count(params.get('w'));
    const partitionKey = bytes(params.get('pk'));
    const qu = params.get('qu');
    const unit = qu === undefined ? 'requests' : qu.type === 'string' ? qu.value : undefined;
    if (quota === undefined || quota === BAD || window === BAD || partitionKey === BAD) {
      return undefined;
    }
    if (unit === undefined) return undefined;
    const entry: RateLimitPolicy = { policy, quota, unit };
    if (window !== undefined) entry.window = window;
    if (partitionKey !== undefined) entry.partitionKey = partitionKey;
    return entry;
  });
}

/**
 * The longest window, in seconds, of a `RateLimit-Policy` quota that is
 * paced as a rate: the adaptive rate limiter's memory (a key idle that long
 * is forgotten, so a longer window could not be kept to). A quota over a
 * longer window (a daily one) paced at `q / w` would spread it thin: it is
 * left to the `RateLimit` field's spent count and reset.
 */
export const PACED_WINDOW_MAX = 300;

/**
 * The quota that paces, of a `RateLimit-Policy` field's policies: of those
 * counted in requests (`qu` absent or `"requests"`) with a quota `q` > 0 and
 * a window `w` of 1 to {@link PACED_WINDOW_MAX} seconds, the one with the
 * least `q / w`, the shorter window breaking a tie. The partition key `pk`
 * does not choose: every policy a response names applies to its request.
 */
export function pacingPolicy(
  policies: readonly RateLimitPolicy[],
): { quota: number; window: number } | undefined {
  let best: { quota: number; window: number } | undefined;
  for (const { quota, window, unit } of policies) {
    if (unit !== 'requests' || quota <= 0 || window === undefined) continue;
    if (window <= 0 || window > PACED_WINDOW_MAX) continue;
    const r = quota / window;
    const b = best === undefined ? Number.POSITIVE_INFINITY : best.quota / best.window;
    if (best === undefined || r < b || (r === b && window < best.window)) best = { quota, window };
  }
  return best;
}

/**
 * The policy that paces: the one whose quota runs out first. With some
 * policy spent (`r=0`), the spent one that resets latest (no request fits
 * before it); otherwise the one with the least left, the latest reset
 * breaking a tie. A policy without `r` paces only when none says its `r`.
 */
export function mostRestrictive(states: readonly RateLimitState[]): RateLimitState | undefined {
  let best: RateLimitState | undefined;
  for (const state of states) {
    if (best === undefined || tighter(state, best)) best = state;
  }
  return best;
}

function tighter(a: RateLimitState, b: RateLimitState): boolean {
  if (a.remaining === undefined) return b.remaining === undefined && later(a, b);
  if (b.remaining === undefined || a.remaining < b.remaining) return true;
  return a.remaining === b.remaining && later(a, b);
}

function later(a: RateLimitState, b: RateLimitState): boolean {
  return (a.reset ?? -1) > (b.reset ?? -1);
}
