/**
 * Attempt 1 of `createAgent` for a legacy caller (`undici.request`,
 * `stream`, `pipeline`, undici 7's `fetch`) in the common case: a request
 * of the client's own settings, an idempotent method without a body, the
 * attempt deadline left to undici's headers timer (first.ts,
 * `heldByUndici`), the policies quiet (`Executor.leanFirst`).
 *
 * One flat handler, built in one allocation, carries such a request to its
 * success: admitted, sent, told to the policies, then relayed to the
 * caller's handler. It holds no logical request, flight, deadline or abort
 * token, and it is no `AttemptHead`: the class chain of first.ts is built
 * only when something else happens. At the first event that is not a plain
 * success (a failure, a status of 400 or more, the caller's abort, the
 * deadline), it builds a `LegacyFirst`, which takes the request over as if
 * it had sent it on its own lean path (`LegacyFirst.takeOver`), and hands it
 * that event and every later one: there is one implementation of everything
 * but the success.
 */
import type { Dispatcher } from 'undici';
import { type Deadline, startSteadyDeadline } from '../internal/deadlines.js';
import type { Gate } from '../policy/gate.js';
import type { PolicyRequest } from '../policy/policies.js';
import { upperMethod } from '../request-options.js';
import { hasQuotaRaw, parseHeaders, rawHeader } from './attempt.js';
import { originOf, type StaunchDispatchOptions } from './call.js';
import type { UndiciRuntime } from './client.js';
import {
  awaitWrite,
  HELD_SLACK_MS,
  type LeanState,
  LegacyFirst,
  rejectLegacy,
  runFirst,
  State,
  type Unwritten,
} from './first.js';
import type { LegacyHandler } from './legacy.js';
import { expectSend, type Probe } from './stale.js';

/**
 * Runs one logical request for a legacy `caller` over `dispatch` (the
 * `Agent`'s, on undici 7): on the lean handler below when the request
 * allows it, else as first.ts's `runFirst` does.
 * @internal
 */
export function runLegacy(
  client: UndiciRuntime,
  dispatch: Dispatcher.Dispatch,
  opts: Dispatcher.DispatchOptions,
  caller: LegacyHandler,
): void {
  const method = opts.method;
  if (
    client.undiciHoldsDeadline === true &&
    typeof method === 'string' &&
    opts.body == null &&
    opts.headersTimeout == null &&
    (opts as StaunchDispatchOptions).staunch === undefined
  ) {
    const upper = upperMethod(method);
    if (client.defaults.retry.methods.has(upper)) {
      new LeanFirst(client, caller, dispatch, opts, upper).run();
      return;
    }
  }
  runFirst(client, dispatch, opts, caller, false);
}

/** The lean handler: see the module's comment. */
class LeanFirst implements LeanState, PolicyRequest, Probe, Unwritten {
  readonly #client: UndiciRuntime;
  readonly #caller: LegacyHandler;
  readonly dispatch: Dispatcher.Dispatch;
  readonly opts: Dispatcher.DispatchOptions;
  readonly method: string;
  origin = '';
  key = '';
  /** Admitted (`Executor.leanFirst`): set once the request is sent on this path. */
  gate: Gate | undefined = undefined;
  sentAt = 0;
  /** undici's abort of this dispatch, from `onConnect` (the request is written then). */
  abort: ((reason?: Error) => void) | undefined = undefined;
  #state = State.Waiting;
  /** The handler that took the request over, once something other than a success happened. */
  #slow: LegacyFirst | undefined = undefined;
  /**
   * Staunch's deadline for what is left of attempt 1's time, once undici
   * has not written it at the second look or wrote it on a connection it
   * waited for (first.ts, `lookAtWrites`, `wroteFresh`): undici's timer
   * does not run while it waits.
   */
  deadline: Deadline | undefined = undefined;
  /** The response's raw headers, read by staunch's own pacing readers (`get`). */
  #raw: Buffer[] | undefined = undefined;
  // Where it went out (stale.ts, `Probe`).
  socket: Probe['socket'] = undefined;
  reused = false;
  bytesRead = 0;
  /** What the caller calls to abort (given to its `onConnect`). */
  readonly callerAbort = (reason?: Error): void => {
    const slow = this.#slow;
    if (slow !== undefined) slow.callerAbort(reason);
    else if (this.#state === State.Waiting) this.#handOver().callerAbort(reason);
    else if (this.#state === State.Forwarding) {
      this.abort?.(reason ?? new Error('The request was aborted'));
    }
  };

  constructor(
    client: UndiciRuntime,
    caller: LegacyHandler,
    dispatch: Dispatcher.Dispatch,
    opts: Dispatcher.DispatchOptions,
    method: string,
  ) {
    this.#client = client;
    this.#caller = caller;
    this.dispatch = dispatch;
    this.opts = opts;
    this.method = method;
  }

  /** The URL, for a policy key that reads it (the default one reads `origin`). */
  get url(): string {
    return `${this.origin}${this.opts.path ?? ''}`;
  }

  /**
   * Tells the caller the request started, as any dispatcher does first,
   * admits attempt 1 and sends it; hands the request to `runFull` when the
   * caller aborted already, something listens, or the policies are not quiet.
   */
  run(): void {
    const executor = this.#client.executor;
    let gate: Gate | undefined;
    try {
      // No context, as undici's own Request passes none to a legacy handler.
      this.#caller.onConnect?.(this.callerAbort);
      // The caller aborted from its own start callback: the full path sees it at once.
      if (this.#slow !== undefined) {
        this.#slow.runFull(this.dispatch, this.opts, false, undefined);
        return;
      }
      this.origin = originOf(this.opts.origin);
      const key = executor.leanKey(this);
      if (key === undefined) {
        this.#handOver().runFull(this.dispatch, this.opts, false, undefined);
        return;
      }
      this.key = key;
      const now = executor.clock.now();
      gate = executor.leanFirst(key, now);
      if (gate === undefined) {
        this.#handOver().runFull(this.dispatch, this.opts, false, key);
        return;
      }
      this.sentAt = now;
    } catch (error) {
      this.#state = State.Handed;
      rejectLegacy(this.#caller, error);
      return;
    }
    this.gate = gate;
    let free: boolean;
    try {
      free = this.dispatch(this.opts, this as unknown as Dispatcher.DispatchHandler);
    } catch (error) {
      this.onError(error as Error);
      return;
    }
    if (
      !free &&
      this.abort === undefined &&
      this.#state === State.Waiting &&
      this.#slow === undefined
    ) {
      awaitWrite(this);
    }
  }

  /** Builds the handler that takes the request over from here (once). */
  #handOver(): LegacyFirst {
    const slow = new LegacyFirst(this.#client, this.#caller);
    if (this.gate !== undefined) slow.takeOver(this);
    this.#slow = slow;
    return slow;
  }

  /** See first.ts, `lookAtWrites`: not written at the last look, it takes staunch's deadline. */
  lookedAt(last: boolean): boolean {
    if (this.#slow !== undefined) return this.#slow.lookedAt(last);
    if (this.abort !== undefined || this.#state !== State.Waiting) return false;
    if (!last) return true;
    this.#holdRest();
    return false;
  }

  /** Written on a new connection after a wait longer than undici's timer's slack: as in first.ts. */
  wroteFresh(): void {
    if (this.#slow !== undefined) this.#slow.wroteFresh();
    else if (
      this.#state === State.Waiting &&
      this.deadline === undefined &&
      this.#client.executor.clock.now() - this.sentAt > HELD_SLACK_MS
    ) {
      this.#holdRest();
    }
  }

  /** Staunch's deadline for what is left of attempt 1's time; none left: it ends now. */
  #holdRest(): void {
    const { clock } = this.#client.executor;
    const { timeout } = this.#client.defaults;
    const left = this.sentAt + Math.min(timeout.attempt, timeout.total) - clock.now();
    if (left <= 0) this.#handOver().onDeadline();
    else this.deadline = startSteadyDeadline(clock, left, this);
  }

  /** Attempt 1's deadline fired (the deadline list calls it): the handler taking over ends it. */
  onDeadline(): void {
    if (this.#slow !== undefined) this.#slow.onDeadline();
    else if (this.#state === State.Waiting) this.#handOver().onDeadline();
  }

  onConnect(abort: (reason?: Error) => void): void {
    if (this.#slow !== undefined) {
      this.#slow.onConnect(abort);
      return;
    }
    this.abort = abort;
    expectSend(this);
  }

  onHeaders(
    statusCode: number,
    rawHeaders: Buffer[],
    resume: () => void,
    statusMessage?: string,
  ): boolean | undefined {
    if (this.#slow !== undefined) {
      return this.#slow.onHeaders(statusCode, rawHeaders, resume, statusMessage);
    }
    if (this.#state !== State.Waiting) return false;
    // 1xx informational responses are not the response.
    if (statusCode < 200) return true;
    if (statusCode >= 400) {
      return this.#handOver().onHeaders(statusCode, rawHeaders, resume, statusMessage);
    }
    this.deadline?.cancel();
    this.#state = State.Forwarding;
    this.#raw = rawHeaders;
    const client = this.#client;
    try {
      // Below 400 the executor only reads the status and headers and tells the policies.
      const headers = client.ownPacing === true ? this : parseHeaders(rawHeaders);
      client.executor.leanSucceeded(this.key, this.gate!, statusCode, headers, this.sentAt);
    } catch (error) {
      this.#state = State.Handed;
      rejectLegacy(this.#caller, error);
      this.abort?.(new Error('staunch: response released'));
      return false;
    }
    const caller = this.#caller;
    caller.onResponseStarted?.();
    return caller.onHeaders?.(statusCode, rawHeaders, resume, statusMessage);
  }

  onData(chunk: Buffer): boolean | undefined {
    if (this.#state === State.Forwarding) return this.#caller.onData?.(chunk);
    return this.#slow?.onData(chunk) ?? false;
  }

  onComplete(rawTrailers: Buffer[] | null): void {
    if (this.#state === State.Forwarding) this.#caller.onComplete?.(rawTrailers);
    else this.#slow?.onComplete(rawTrailers);
  }

  onError(error: Error): void {
    if (this.#state === State.Forwarding) this.#caller.onError?.(error);
    else if (this.#slow !== undefined) this.#slow.onError(error);
    else if (this.#state === State.Waiting) this.#handOver().onError(error);
  }

  /** One response header, from the raw headers (the executor's own pacing readers). */
  get(name: string): string | undefined {
    return this.#raw === undefined ? undefined : rawHeader(this.#raw, name);
  }

  /** Whether the response carries a quota header (server-delay.ts, `hasQuotaHeaders`). */
  hasQuotaHeaders(): boolean {
    return this.#raw !== undefined && hasQuotaRaw(this.#raw);
  }
}
