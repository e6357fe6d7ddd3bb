/**
 * Typed listeners: what staunch did, with method and a redacted URL, never a
 * header or a body. A throwing listener never breaks the request.
 */
import type { CircuitState } from './policy/breaker/ops.js';
import type { ReplayRequest } from './replay.js';
import type { PacingSource } from './retry/server-delay.js';

/** Fields every event carries. */
export interface RequestEvent {
  /** Upper-case method. */
  method: string;
  /** The URL with credentials redacted. */
  url: string;
}

/** An attempt is about to be sent (the policies admitted it). */
export interface AttemptStartEvent extends RequestEvent {
  /** 1 for the first attempt. */
  attempt: number;
  /** `true` for a hedge: sent while an earlier attempt was still in flight (docs/hedging.md). */
  hedge?: true;
}

/** One attempt settled. */
export interface AttemptEvent extends RequestEvent {
  /** 1 for the first attempt. */
  attempt: number;
  /** The response status, when the attempt got one. */
  status?: number;
  /** The error code (`ECONNREFUSED`, `STAUNCH_DEADLINE`…), when it failed without a response. */
  code?: string;
  /** What kind of failed status it was, when the `classify` option said (`tokens`, `insufficient_quota`…). */
  kind?: string;
  /**
   * `true` when the response is the server's stored answer to the idempotency
   * key's first request (`Idempotent-Replayed: true`, as Stripe sends it).
   */
  replayed?: true;
  /** `true` for a hedge: sent while an earlier attempt was still in flight (docs/hedging.md). */
  hedge?: true;
  /** `true` when another attempt won the race of hedged attempts and this one was aborted. */
  lost?: true;
  /** ms from the attempt's start to its response headers or its failure. */
  duration: number;
}

/** What made an attempt worth retrying. */
export type RetryReason = 'status' | 'unsent' | 'maybe-sent' | 'timeout';

/**
 * A retry is scheduled: said when it is decided (the retry budget, if it
 * charges one, has granted it), with its delay, before the wait. Each wait
 * that follows (the delay, then any rate limiter, queue or open circuit
 * before the attempt leaves) is a `wait` event once it is over. A retry
 * that the budget refuses is said as `giveUp` only.
 */
export interface RetryEvent extends RequestEvent {
  /** The attempt that failed. */
  attempt: number;
  /** ms the retry waits before it is admitted: the backoff, or the server's pacing. */
  delay: number;
  /** Where the delay came from: a server hint, or the backoff. */
  delaySource: PacingSource | 'backoff';
  reason: RetryReason;
  status?: number;
  code?: string;
  /** The failed status's kind, when the `classify` option said. */
  kind?: string;
}

/**
 * Why a retryable outcome was not retried:
 * - `attempts`: `retry.attempts` reached;
 * - `deadline`: the next wait would outlive `timeout.total`;
 * - `retry-after`: the server asked for more than `retry.maxRetryAfter`;
 * - `not-replayable`: the outcome may have reached the server and the request
 *   is neither idempotent nor keyed;
 * - `body-not-replayable`: the request body was a stream already sent;
 * - `budget`: the key's retry budget is spent;
 * - `circuit-open`, `rate-limited`, `queue-full`, `queue-timeout`: a policy
 *   refused an attempt, the first one included (`attempts` counts those
 *   sent; the error thrown says which).
 */
export type GiveUpReason =
  | 'attempts'
  | 'deadline'
  | 'retry-after'
  | 'not-replayable'
  | 'body-not-replayable'
  | 'budget'
  | 'circuit-open'
  | 'rate-limited'
  | 'queue-full'
  | 'queue-timeout';

/** The logical request ends on a retryable failure that will not be retried. */
export interface GiveUpEvent extends RequestEvent {
  /** Attempts made. */
  attempts: number;
  reason: GiveUpReason;
  status?: number;
  code?: string;
  /** The failed status's kind, when the `classify` option said. */
  kind?: string;
  /** For `retry-after` and `deadline`: the delay that was refused, in ms. */
  delay?: number;
  /**
   * For a replayable request (idempotent method or idempotency key) whose body
   * can be kept: what it takes to send it again later. Non-enumerable, secret
   * headers left out. See `examples/deferred-replay`.
   */
  readonly replay?: ReplayRequest;
}

/**
 * Why a request waited before an attempt:
 * - `backoff`: the retry's backoff delay;
 * - `server`: a server's pacing hint (`Retry-After`, `retry-after-ms`, `RateLimit`);
 * - `rate-limit`: a token of the client-side rate limiter;
 * - `queue`: a slot of the concurrency limit;
 * - `circuit-open`: the verdict of an open circuit's next probe;
 * - `budget`: the retry budget to hold a retry again (a retry of a failure
 *   waits for it within its deadline instead of being dropped).
 */
export type WaitReason = 'backoff' | 'server' | 'rate-limit' | 'queue' | 'circuit-open' | 'budget';

/** A request waited before an attempt (said once the wait is over, whatever ended it). */
export interface WaitEvent extends RequestEvent {
  /** The attempt that waited to be sent (1 for the first). */
  attempt: number;
  reason: WaitReason;
  /** ms actually waited. */
  duration: number;
}

/** The logical request settled: a response handed back, or an error thrown. */
export interface RequestEndEvent extends RequestEvent {
  /** Attempts sent (0 when a policy refused the first one). */
  attempts: number;
  /** The status handed back, when a response was. */
  status?: number;
  /** `true` when the response handed back is a replay (`Idempotent-Replayed: true`). */
  replayed?: true;
  /** The error's code (`STAUNCH_DEADLINE`, `ECONNRESET`…), when one was thrown. */
  code?: string;
  /** Hedges sent (docs/hedging.md), when there was one. */
  hedges?: number;
  /** When a hedge was sent: the attempt whose response was handed back (1: the first attempt won). */
  won?: number;
  /** ms from the call to the response headers handed back, or to the error. */
  duration: number;
}

/** A circuit changed state. */
export interface BreakerStateChangeEvent {
  /** The policy key (the origin by default). */
  key: string;
  from: CircuitState;
  to: CircuitState;
}

/** The state store changed health (a shared store that became unreachable, or came back). */
export interface StoreStatusEvent {
  /** What failed, when degraded (already redacted by the store). */
  error?: string;
}

/**
 * A request arrived already retried by an outer layer (an SDK's own retries):
 * its `retryCountHeader` is above 0. staunch then sends such requests once and
 * leaves the retrying to that layer; said once per client.
 */
export interface OuterRetryEvent extends RequestEvent {
  /** The header that said so (`x-stainless-retry-count`). */
  header: string;
  /** Its value. */
  value: number;
}

/** Listeners, all optional. */
export interface StaunchListeners {
  attemptStart?: (event: AttemptStartEvent) => void;
  attempt?: (event: AttemptEvent) => void;
  retry?: (event: RetryEvent) => void;
  giveUp?: (event: GiveUpEvent) => void;
  /** Time spent waiting before an attempt: backoff, a server hint, the limiter, the queue, an open circuit. */
  wait?: (event: WaitEvent) => void;
  /** The logical request settled (once per call, after every other event of it). */
  end?: (event: RequestEndEvent) => void;
  breakerStateChange?: (event: BreakerStateChangeEvent) => void;
  /** The store fell back to local state (said once per episode). */
  storeDegraded?: (event: StoreStatusEvent) => void;
  /** The store is shared again. */
  storeRecovered?: (event: StoreStatusEvent) => void;
  /** An outer layer retries too (`retryCountHeader` above 0); said once per client. */
  outerRetry?: (event: OuterRetryEvent) => void;
}

/** Calls a listener, swallowing what it throws: observers never break requests. */
export function emit<E>(listener: ((event: E) => void) | undefined, event: E): void {
  if (listener === undefined) return;
  try {
    listener(event);
  } catch {
    // A listener's bug must not turn a success into a failure.
  }
}

/** `fields` without its `undefined` values: an event's optional fields are absent, never `undefined`. */
export function defined<T extends object>(
  fields: T,
): Partial<{ [K in keyof T]: Exclude<T[K], undefined> }> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) if (value !== undefined) out[key] = value;
  return out as Partial<{ [K in keyof T]: Exclude<T[K], undefined> }>;
}
