/**
 * What the executor runs: one logical request, and the adapter's way of
 * sending one attempt of it. Types only; the adapters (fetch, undici) build
 * them, the executor and the policies read them.
 */
import type {
  ResolvedHedgeOptions,
  ResolvedRetryOptions,
  ResolvedTimeoutOptions,
} from './options.js';
import type { ReplayRequest } from './replay.js';
import type { HeaderSource } from './retry/server-delay.js';

/** How an adapter sends one attempt and reads its response. */
export interface Exchange<R> {
  /** Sends one attempt; must honour `signal`. */
  send(signal: AbortSignal, attempt: number): Promise<R>;
  status(response: R): number;
  headers(response: R): HeaderSource;
  /**
   * Releases a response that will not be handed back: drain a bounded amount
   * so the connection can be reused, or cancel. Must stop once `stop` settles.
   */
  discard(response: R, stop: Promise<unknown>): Promise<void>;
  /**
   * False once the request can no longer be sent again (a stream body was
   * read). `unsent`: the failed attempt provably never reached the server.
   */
  resendable(unsent: boolean): boolean;
  /** Called with a response handed back to the caller, with a function that unlinks the caller's signal. */
  handOver?(response: R, unlink: () => void): void;
  /**
   * `true`: `send` reads its signal only as staunch's own code does
   * (`aborted`, `reason`, `addEventListener`/`removeEventListener('abort')`),
   * never handing it to a fetch or to user code, so the executor may pass a
   * plain token (src/internal/token.ts) instead of an `AbortController`'s
   * signal. @default false
   */
  readonly tokenSignal?: boolean;
  /**
   * `true`: attempts come and go many at a time beside undici's own timers
   * (an undici dispatch), and their deadlines go on the steady list
   * (src/internal/deadlines.ts, `startSteadyDeadline`). @default false
   */
  readonly steadyDeadlines?: boolean;
}

/** One logical request, as the executor sees it. */
export interface LogicalRequest {
  /** Upper case. */
  method: string;
  url: string;
  /** Idempotent method or idempotency key: safe to send again after a maybe-sent failure. */
  replayable: boolean;
  signal: AbortSignal | undefined;
  retry: ResolvedRetryOptions;
  timeout: ResolvedTimeoutOptions;
  /**
   * Hedging (docs/hedging.md): `undefined`, none. The executor hedges only a
   * replayable request whose exchange is still `resendable`.
   */
  hedge?: ResolvedHedgeOptions | undefined;
  /** The request's secret values, computed only when an error needs scrubbing. */
  secrets(): readonly string[];
  /**
   * The URL's `scheme://authority` exactly as the URL starts with it, when
   * the adapter has it apart (undici's `origin`): the default policy key
   * compares it instead of scanning the URL.
   */
  origin?: string | undefined;
  /** The body when it is a string, for the policy key (`PolicyRequest.body`). */
  body?: string | undefined;
  /**
   * Whether the request carries an idempotency key header. Asked only of a
   * 409 or 422 response, which the Idempotency-Key draft gives a meaning for
   * keyed requests (src/retry/classify.ts). @default not keyed
   */
  keyed?: (() => boolean) | undefined;
  /** How to send it again later, for `giveUp` events (replayable requests only). */
  replay?: (() => ReplayRequest | undefined) | undefined;
}

/** How one attempt ended: a response (and how to unlink the caller's signal from it), or a failure. */
export type Outcome<R> =
  | { ok: true; response: R; unlink: () => void }
  | { ok: false; error: unknown };

/** Where a logical request that an adapter started with `Executor.first` ends: once, one of the two. */
export interface FirstSink<R> {
  resolve(response: R): void;
  reject(error: unknown): void;
}

/**
 * Attempt 1 admitted for an adapter to send itself (`Executor.first`): it
 * must settle within `limit` ms (the attempt's deadline, which the adapter
 * arms; `Infinity` for none), then be handed to `Executor.firstDone`.
 */
export interface FirstTicket {
  readonly limit: number;
}
