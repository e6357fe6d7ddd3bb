/**
 * `--mode sim`: one strategy in virtual time. The requests run through the
 * real `Executor` and the real policies (`createPolicies` on a
 * `memoryStore`), on a `VirtualClock`; the transport is the server model,
 * answering after the round trip and the service time. The executor is
 * driven through a light `Exchange` (status and a header record), not
 * WHATWG `Response`s: that is what lets 100 000 requests run in seconds.
 */
import type { StaunchListeners } from '../../events.js';
import { type Exchange, Executor, type LogicalRequest } from '../../executor/index.js';
import { resolveHedgeOptions, resolveRetryOptions, resolveTimeoutOptions } from '../../options.js';
import { createPolicies } from '../../policy/policies.js';
import { memoryStore } from '../../store/memory.js';
import type { LabConfig, StrategyName } from '../options.js';
import { seededRandom } from '../random.js';
import { isAnswer, responseHeaders, ServerModel } from '../server-model.js';
import { type SharedJob, SharedService } from '../sharing.js';
import { strategyConfig } from '../strategies.js';
import { TraceRecorder } from '../trace.js';
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
const settled = Promise.resolve();
/** Virtual ms between two progress reports. */
const PROGRESS_STEP = 1_000;

/** The virtual ms a run of `config` is expected to last at most: what progress is a share of. */
export function horizon(config: LabConfig): number {
  return config.span + (config.arrivals === 'closed' ? 0 : config.deadline);
}

/**
 * Runs `strategy` against the scenario of `config` in virtual time, with the
 * requests arriving at `arrivals` (ms from the start, sorted; ignored by a
 * closed loop, whose clients send back to back). `progress` hears the
 * virtual time (ms from the start) every virtual second.
 * Deterministic: the same config, strategy and arrivals give the same trace.
 */
export async function simulateStrategy(
  config: LabConfig,
  strategy: StrategyName,
  arrivals: ArrayLike<number>,
  progress?: (virtualMs: number) => void,
): Promise<TraceRecorder> {
  const closed = config.arrivals === 'closed';
  const n = closed ? 0 : arrivals.length;
  const trace = new TraceRecorder(n);
  const clock = new VirtualClock(SIM_EPOCH);
  const server = new ServerModel(config.server, seededRandom(config.seed, 'server'));
  const random = seededRandom(config.seed, `jitter:${strategy}`);
  const s = strategyConfig(strategy, config.hedgeDelay);
  const retry = resolveRetryOptions({
    attempts: config.attempts,
    ...(s.backoff !== undefined && { backoff: s.backoff }),
  });
  const timeout = resolveTimeoutOptions({ total: config.deadline });
  const on: StaunchListeners = { giveUp: (event) => trace.outcome(event.reason) };
  const shared = config.sharedStore ? memoryStore() : undefined;
  const executors = Array.from(
    { length: config.clients },
    () =>
      new Executor({
        clock,
        random,
        on,
        policies: createPolicies(s.policies, shared ?? memoryStore(), clock, undefined),
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
    hedge: resolveHedgeOptions(s.hedge),
    secrets: () => [],
  };
  const now = (): number => clock.elapsed();
  const idle = (): void => {};

  const sharing = sharedService(config, clock);
  // Server work of the requests served without sharing (sharing counts its own).
  let work = 0;

  // The model reads an attempt's signal as staunch's own code does: a token (`tokenSignal`)
  // spares an AbortController.
  const exchange: Exchange<SimResponse> = {
    send: (signal, attempt) => {
      const t = now() + half;
      const verdict = server.arrive(t);
      trace.attempt(t, verdict.status, attempt);
      // A pure loop never sees the server's pacing: its own backoff is what it is named after.
      const response: SimResponse = {
        status: verdict.status,
        headers: s.pacing ? responseHeaders(mode, verdict) : NO_HEADERS,
      };
      const demand = verdict.work ?? 0;
      return new Promise<SimResponse>((resolve, reject) => {
        const back = (): void => {
          signal.removeEventListener('abort', abort);
          resolve(response);
        };
        const start = t + verdict.delay - (sharing === undefined ? demand : 0);
        let leave: (seen: number) => void;
        if (sharing === undefined || demand === 0) {
          work += demand;
          clock.atElapsed(t + verdict.delay + half, back);
          // Seen at `seen`, the abort stops the work: what was not done yet is not spent.
          leave = (seen) => {
            work -= Math.min(demand, Math.max(0, start + demand - seen));
          };
        } else {
          let job: SharedJob | undefined;
          let left = false;
          clock.atElapsed(start, () => {
            if (!left)
              job = sharing.enter(start, demand, () => clock.atElapsed(now() + half, back));
          });
          leave = (seen) =>
            clock.atElapsed(seen, () => {
              left = true;
              if (job !== undefined) sharing.leave(job, seen);
            });
        }
        // The server sees the client go half a round trip after the abort (live: the socket closes).
        const abort = (): void => {
          leave(now() + half);
          reject(signal.reason);
        };
        signal.addEventListener('abort', abort);
      });
    },
    status: (r) => r.status,
    headers: (r) => r.headers,
    discard: () => settled,
    resendable: () => true,
    tokenSignal: true,
  };

  let active = 0;
  const start = (i: number, executor: Executor, then: () => void): void => {
    active++;
    const done = (ok: boolean): void => {
      trace.settle(i, now(), ok);
      active--;
      then();
    };
    executor.run(request, exchange).then(
      (r) => done(isAnswer(r.status)),
      (error: unknown) => {
        const code = (error as { code?: unknown } | null)?.code;
        // Policy refusals and deadlines emit giveUp; anything else is counted by its code.
        if (typeof code !== 'string' || !GIVE_UP_CODES.has(code)) trace.outcome(String(code));
        done(false);
      },
    );
  };

  if (closed) {
    // Each client sends its next request the instant its previous one settled, until the span ends.
    const loop = (executor: Executor): void => {
      if (now() >= config.span || trace.start.length >= config.requests) return;
      start(trace.begin(now()), executor, () => loop(executor));
    };
    for (let k = 0; k < Math.max(1, config.concurrency); k++) {
      const executor = executors[k % executors.length]!;
      clock.atElapsed(0, () => loop(executor));
    }
  } else if (n > 0) {
    // One arrival scheduled at a time: the heap stays small, and arrivals keep their order.
    const arrive = (i: number): void => {
      trace.start[i] = now();
      start(i, executors[i % executors.length]!, idle);
      if (i + 1 < n) clock.atElapsed(arrivals[i + 1]!, () => arrive(i + 1));
    };
    clock.atElapsed(arrivals[0]!, () => arrive(0));
  }
  if (progress !== undefined) {
    const tick = (): void => {
      progress(now());
      if (active > 0 || clock.pending > 0) clock.timer(PROGRESS_STEP, tick);
    };
    clock.timer(PROGRESS_STEP, tick);
  }
  await clock.run();
  trace.work = work + (sharing?.work ?? 0);
  if (active !== 0 || trace.settled !== trace.start.length) {
    throw new Error(`lab: ${active} simulated requests never settled`);
  }
  return trace;
}

/** The upstream's processor sharing on the virtual clock, when the scenario has cores. */
function sharedService(config: LabConfig, clock: VirtualClock): SharedService | undefined {
  const cores = config.server.cores ?? 0;
  if (cores === 0) return undefined;
  return new SharedService(cores, (t, fn) => clock.atElapsed(t, fn));
}

const GIVE_UP_CODES: ReadonlySet<string> = new Set([
  'STAUNCH_DEADLINE',
  'STAUNCH_CIRCUIT_OPEN',
  'STAUNCH_RATE_LIMITED',
  'STAUNCH_QUEUE_FULL',
  'STAUNCH_QUEUE_TIMEOUT',
]);
