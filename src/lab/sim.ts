/**
 * `--mode sim`: one strategy in virtual time. The requests run through the
 * real `Executor` and the real policies (`createPolicies` on a
 * `memoryStore`), on a `VirtualClock`; the transport is the server model,
 * answering after the round trip and the service time. The executor is
 * driven through a light `Exchange` (status and a header record), not
 * WHATWG `Response`s: that is what lets 100 000 requests run in seconds.
 */
import type { StaunchListeners } from '../events.js';
import { type Exchange, Executor, type LogicalRequest } from '../executor.js';
import { resolveRetryOptions, resolveTimeoutOptions } from '../options.js';
import { createPolicies } from '../policy/policies.js';
import { memoryStore } from '../store/memory.js';
import type { LabConfig, StrategyName } from './options.js';
import { seededRandom } from './random.js';
import { retryAfterHeaders, ServerModel } from './server-model.js';
import { strategyConfig } from './strategies.js';
import { TraceRecorder } from './trace.js';
import { VirtualClock } from './virtual-clock.js';

/** The virtual epoch: 2026-01-01T00:00:00Z, so that every run starts at the same instant. */
export const SIM_EPOCH: number = Date.UTC(2026, 0, 1);

/** The URL every simulated request goes to (one origin: one policy key). */
export const SIM_URL = 'http://upstream.lab/v1/complete';

interface SimResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
}

const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});
const OK: SimResponse = Object.freeze({ status: 200, headers: NO_HEADERS });
const REFUSED: SimResponse = Object.freeze({ status: 429, headers: NO_HEADERS });
const UNAVAILABLE: SimResponse = Object.freeze({ status: 503, headers: NO_HEADERS });
const settled = Promise.resolve();

/**
 * Runs `strategy` against the scenario of `config` in virtual time, with the
 * requests arriving at `arrivals` (ms from the start, sorted).
 * Deterministic: the same config, strategy and arrivals give the same trace.
 */
export async function simulateStrategy(
  config: LabConfig,
  strategy: StrategyName,
  arrivals: ArrayLike<number>,
): Promise<TraceRecorder> {
  const n = arrivals.length;
  const trace = new TraceRecorder(n);
  const clock = new VirtualClock(SIM_EPOCH);
  const server = new ServerModel(config.server, seededRandom(config.seed, 'server'));
  const random = seededRandom(config.seed, `jitter:${strategy}`);
  const s = strategyConfig(strategy);
  const retry = resolveRetryOptions({
    attempts: config.attempts,
    ...(s.backoff !== undefined && { backoff: s.backoff }),
  });
  const timeout = resolveTimeoutOptions({ total: config.deadline });
  const on: StaunchListeners = { giveUp: (event) => trace.outcome(event.reason) };
  const executors = Array.from(
    { length: config.clients },
    () =>
      new Executor({
        clock,
        random,
        on,
        policies: createPolicies(s.policies, memoryStore(), clock, undefined),
      }),
  );
  const half = config.rtt / 2;
  const mode = config.server.retryAfter;
  const request: LogicalRequest = {
    method: 'GET',
    url: SIM_URL,
    replayable: true,
    signal: undefined,
    retry,
    timeout,
    secrets: () => [],
  };

  const send = (attempt: number): Promise<SimResponse> => {
    const t = clock.now() - SIM_EPOCH + half;
    const verdict = server.arrive(t);
    trace.attempt(t, verdict.status, attempt);
    const response =
      verdict.status === 200
        ? OK
        : verdict.status === 503
          ? UNAVAILABLE
          : verdict.retryAfter === undefined
            ? REFUSED
            : { status: 429, headers: retryAfterHeaders(mode, verdict) };
    return new Promise<SimResponse>((resolve) => {
      clock.at(SIM_EPOCH + t + verdict.delay + half, () => resolve(response));
    });
  };

  const start = (i: number): void => {
    trace.start[i] = clock.now() - SIM_EPOCH;
    const exchange: Exchange<SimResponse> = {
      // The transport ignores the signal: an aborted attempt's response is simply dropped.
      send: (_signal, attempt) => send(attempt),
      status: (r) => r.status,
      headers: (r) => r.headers,
      discard: () => settled,
      resendable: () => true,
    };
    executors[i % executors.length]!.run(request, exchange).then(
      (r) => trace.settle(i, clock.now() - SIM_EPOCH, r.status < 400),
      (error: unknown) => {
        trace.settle(i, clock.now() - SIM_EPOCH, false);
        const code = (error as { code?: unknown } | null)?.code;
        // Policy refusals and deadlines emit giveUp; anything else is counted by its code.
        if (typeof code !== 'string' || !GIVE_UP_CODES.has(code)) trace.outcome(String(code));
      },
    );
  };

  for (let i = 0; i < n; i++) {
    const at = arrivals[i]!;
    clock.at(SIM_EPOCH + at, () => start(i));
  }
  await clock.run();
  if (trace.settled !== n) {
    throw new Error(`lab: ${n - trace.settled} of ${n} simulated requests never settled`);
  }
  return trace;
}

const GIVE_UP_CODES: ReadonlySet<string> = new Set([
  'STAUNCH_DEADLINE',
  'STAUNCH_CIRCUIT_OPEN',
  'STAUNCH_RATE_LIMITED',
  'STAUNCH_QUEUE_FULL',
  'STAUNCH_QUEUE_TIMEOUT',
]);
