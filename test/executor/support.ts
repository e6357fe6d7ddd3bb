/**
 * What the executor's unit tests drive it with: an in-memory `Exchange` that
 * answers each attempt from a script (no sockets), a logical request, and an
 * executor on the fake clock and a fixed random, whose events are recorded
 * in order. Pure logic, so no server: the adapters' own tests cover HTTP.
 */

import type { StaunchListeners } from '../../src/events.js';
import { type Exchange, Executor, type LogicalRequest } from '../../src/executor/index.js';
import type { Random } from '../../src/internal/clock.js';
import type { ResolvedRetryOptions, ResolvedTimeoutOptions } from '../../src/options.js';
import { DEFAULT_RETRY, DEFAULT_TIMEOUT } from '../../src/options.js';
import { createPolicies, type PolicyOptions } from '../../src/policy/policies.js';
import { memoryStore } from '../../src/store/memory.js';
import { type FakeClock, fakeClock } from '../helpers/clock.js';

/** A response of the in-memory exchange. */
export interface FakeResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
}

/** What one attempt does: answer a status (with headers), fail, or never answer. */
export type Step =
  | number
  | { readonly status: number; readonly headers?: Record<string, string> }
  | { readonly error: unknown }
  | 'hang';

/** An `Exchange` that plays `steps` in order and counts what it saw. */
export class ScriptedExchange implements Exchange<FakeResponse> {
  readonly #steps: Step[];
  /** The attempt numbers sent, in order. */
  readonly sent: number[] = [];
  /** Responses discarded (not handed back). */
  readonly discarded: FakeResponse[] = [];
  /** Signals of the attempts, in order. */
  readonly signals: AbortSignal[] = [];
  /** Responses handed back with `handOver`. */
  handedOver = 0;
  resendableAnswer = true;

  constructor(steps: Step[]) {
    this.#steps = [...steps];
  }

  send(signal: AbortSignal, attempt: number): Promise<FakeResponse> {
    this.sent.push(attempt);
    this.signals.push(signal);
    const step = this.#steps.shift();
    if (step === undefined) throw new Error(`attempt ${attempt} was not scripted`);
    if (step === 'hang') return new Promise(() => {});
    if (typeof step === 'number') return Promise.resolve({ status: step, headers: {} });
    if ('error' in step) return Promise.reject(step.error);
    return Promise.resolve({ status: step.status, headers: step.headers ?? {} });
  }

  status(response: FakeResponse): number {
    return response.status;
  }

  headers(response: FakeResponse): Readonly<Record<string, string>> {
    return response.headers;
  }

  async discard(response: FakeResponse): Promise<void> {
    this.discarded.push(response);
  }

  resendable(): boolean {
    return this.resendableAnswer;
  }

  handOver(_response: FakeResponse, unlink: () => void): void {
    this.handedOver++;
    unlink();
  }
}

/** An error as a transport throws it, with a `code`. */
export function coded(code: string): Error {
  return Object.assign(new Error(`transport failed: ${code}`), { code });
}

/** A logical request; GET (replayable) unless told otherwise. */
export function logical(
  over: Omit<Partial<LogicalRequest>, 'retry' | 'timeout'> & {
    retry?: Partial<ResolvedRetryOptions>;
    timeout?: Partial<ResolvedTimeoutOptions>;
  } = {},
): LogicalRequest {
  const { retry, timeout, ...rest } = over;
  return {
    method: 'GET',
    url: 'https://api.example.com/v1/items',
    replayable: true,
    signal: undefined,
    secrets: () => [],
    ...rest,
    retry: { ...DEFAULT_RETRY, ...retry },
    timeout: { ...DEFAULT_TIMEOUT, ...timeout },
  };
}

/** One recorded event: its listener's name and payload. */
export interface Recorded {
  readonly name: keyof StaunchListeners;
  readonly event: Record<string, unknown>;
  /** The clock's time when it was said. */
  readonly at: number;
}

export interface Harness {
  readonly executor: Executor;
  readonly clock: FakeClock;
  readonly events: Recorded[];
  /** The names of the events said, in order. */
  names(): string[];
  of(name: keyof StaunchListeners): Record<string, unknown>[];
}

/**
 * An executor on a fake clock (autoAdvanced: every sleep fires as soon as
 * nothing else is pending), `random` fixed, each listener recording.
 * `policies`: the client options of the policies (all off by default).
 */
export function harness(
  options: {
    random?: Random;
    policies?: PolicyOptions;
    listen?: (keyof StaunchListeners)[];
    /** `true`: sleeps fire only when the test moves the clock. */
    manual?: boolean;
    /** Called with each event once it is recorded. */
    tap?: (name: keyof StaunchListeners, event: Record<string, unknown>) => void;
  } = {},
): Harness {
  const clock = fakeClock();
  if (options.manual !== true) clock.autoAdvance();
  const events: Recorded[] = [];
  const names: (keyof StaunchListeners)[] = options.listen ?? [
    'attemptStart',
    'attempt',
    'retry',
    'giveUp',
    'wait',
    'end',
  ];
  const on: StaunchListeners = {};
  for (const name of names) {
    (on as Record<string, (e: Record<string, unknown>) => void>)[name] = (event) => {
      events.push({ name, event, at: clock.now() });
      options.tap?.(name, event);
    };
  }
  const policies = createPolicies(
    { breaker: false, budget: false, rateLimit: false, ...options.policies },
    memoryStore(),
    clock,
    undefined,
  );
  const executor = new Executor({ clock, random: options.random ?? (() => 0.5), on, policies });
  return {
    executor,
    clock,
    events,
    names: () => events.map((e) => e.name),
    of: (name) => events.filter((e) => e.name === name).map((e) => e.event),
  };
}
