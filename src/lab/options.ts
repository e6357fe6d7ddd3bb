/**
 * The lab's options: scenarios with their defaults (per mode), strategies,
 * and the validation that turns user input into a frozen `LabConfig`.
 * Every error names the option, the accepted values and what it got.
 */
import { redactUrl } from '../internal/redact.js';
import { describe } from '../internal/validate.js';
import { type ArrivalShape, burstProfile } from './arrivals.js';
import { PRESETS, SCENARIOS, type ScenarioName, sendsPacing } from './scenarios.js';
import type {
  Outage,
  QuotaKind,
  RetryAfterMode,
  ServerOptions,
  SporadicMode,
} from './server-model.js';

export type { ScenarioName } from './scenarios.js';
export { SCENARIOS } from './scenarios.js';

/** The plain retry loops: each backoff alone, and the same loop honouring `Retry-After` (`+ra`). */
export type LoopName =
  | 'fixed'
  | 'fixed+ra'
  | 'exponential'
  | 'exponential+ra'
  | 'full-jitter'
  | 'full-jitter+ra'
  | 'decorrelated'
  | 'decorrelated+ra';
/** The retry strategies the lab compares: the plain loops and staunch's defaults. */
export type StrategyName = LoopName | 'staunch';
/** Virtual time (deterministic) or a real server on loopback. */
export type LabMode = 'sim' | 'live';

/** Every strategy, in the order the table shows them. */
export const STRATEGIES: readonly StrategyName[] = Object.freeze([
  'fixed',
  'fixed+ra',
  'exponential',
  'exponential+ra',
  'full-jitter',
  'full-jitter+ra',
  'decorrelated',
  'decorrelated+ra',
  'staunch',
]);
/** The strategies of a run against an upstream that sends no pacing: the `+ra` loops would equal the pure ones. */
export const UNPACED_STRATEGIES: readonly StrategyName[] = Object.freeze(
  STRATEGIES.filter((name) => !name.endsWith('+ra')),
);
/** The two modes. */
export const MODES: readonly LabMode[] = Object.freeze(['sim', 'live']);
/** How a 429 may announce its wait. */
export const RETRY_AFTER_MODES: readonly RetryAfterMode[] = Object.freeze([
  'none',
  'seconds',
  'ms',
]);

/** Options of a lab run; anything left out takes the scenario's default for the mode. */
export interface LabOptions {
  /** @default 'overload' */
  scenario?: ScenarioName | undefined;
  /** @default 'sim' */
  mode?: LabMode | undefined;
  /** @default every strategy in the order of `STRATEGIES`; without pacing from the upstream, `UNPACED_STRATEGIES` */
  strategies?: readonly StrategyName[] | undefined;
  /** Seed of every random draw (arrivals, jitter, the server's failures). @default 1 */
  seed?: number | undefined;
  /** Logical requests. @default per scenario (overload: 100 000 in sim, 2 000 live) */
  requests?: number | undefined;
  /** ms over which they arrive (0 = all at once). @default per scenario */
  span?: number | undefined;
  /** Overload: peak demand as a multiple of capacity. @default 4.9 */
  peak?: number | undefined;
  /** The upstream's requests per second. @default per scenario (overload: 2 000 in sim, 200 live) */
  capacity?: number | undefined;
  /** Token-bucket size. @default capacity / 10 */
  burst?: number | undefined;
  /** ms from start of service to response. @default 50 */
  serviceTime?: number | undefined;
  /** Round trip between client and upstream, ms (sim only; live has the real one). @default 2 */
  rtt?: number | undefined;
  /** Requests that may queue at the upstream instead of being refused. @default 0 */
  queue?: number | undefined;
  /** How a 429 announces when to return. @default 'none' */
  retryAfter?: RetryAfterMode | undefined;
  /** Share of a request's capacity that refusing one consumes. @default 0.1 */
  rejectCost?: number | undefined;
  /** Probability that a served request fails with 503. @default 0 (flaky: 0.05) */
  failureRate?: number | undefined;
  /** Windows answering 503, ms from the run's start. @default per scenario */
  outages?: readonly Outage[] | undefined;
  /** Deadline of each logical request, ms. @default 60 000 */
  deadline?: number | undefined;
  /** Attempt cap per logical request, the first included. @default 6 */
  attempts?: number | undefined;
  /** Independent staunch clients the requests are spread over (round robin). @default 1 (herd: one per request) */
  clients?: number | undefined;
  /** The `clients` share one state store (the fleet case, in one process). @default false (fleet: true) */
  sharedStore?: boolean | undefined;
  /**
   * A closed loop of this many clients, each sending its next request when the
   * previous one settled, until `span` ms (or `requests` sent); 0 = the
   * scenario's arrival schedule. @default per scenario (quota-4s: 30, sequential: 1)
   */
  concurrency?: number | undefined;
  /** How the upstream counts its capacity. @default 'token-bucket' (window-quota: 'fixed-window') */
  quota?: QuotaKind | undefined;
  /** Fixed window length, ms. @default 1000 */
  window?: number | undefined;
  /** 429s that do not depend on the rate. @default 'none' (sequential: 'alternate') */
  sporadic?: SporadicMode | undefined;
  /** `sporadic: 'random'`: the share of 429s. @default 0 (sequential-random: 0.03) */
  sporadicRate?: number | undefined;
  /**
   * Live only: processes the requests are spread over (round robin), all
   * against the one upstream; each runs the `staunch` strategy. Above 1 (or
   * with a Redis `store`) the run is a fleet run: see docs/lab.md. Integer 1–32.
   * @default 1
   */
  fleet?: number | undefined;
  /**
   * Fleet runs: `'local'` (each process keeps its own state) or a
   * `redis://` / `rediss://` URL: then the fleet runs twice, with local state
   * and with the state shared through that Redis, and the result compares them.
   * @default 'local'
   */
  store?: string | undefined;
}

/** A resolved, validated lab run. */
export interface LabConfig {
  readonly scenario: ScenarioName;
  readonly mode: LabMode;
  readonly strategies: readonly StrategyName[];
  readonly seed: number;
  readonly requests: number;
  readonly span: number;
  readonly peak: number;
  readonly arrivals: ArrivalShape;
  readonly server: ServerOptions;
  readonly rtt: number;
  readonly deadline: number;
  readonly attempts: number;
  readonly clients: number;
  readonly sharedStore: boolean;
  /** Closed-loop clients (0: open loop). */
  readonly concurrency: number;
  /** The share of the optimum the matrix's verdict asks of staunch. */
  readonly goal: number;
  /** Processes of a fleet run (1: the ordinary in-process run, unless `store` is Redis). */
  readonly fleet: number;
  /** `'local'` or the Redis URL as given (print it with `redactUrl`). */
  readonly store: string;
}

export { PRESETS } from './scenarios.js';

/** A Type/RangeError that says which option was wrong and what it accepts. */
export class LabOptionError extends RangeError {
  /** The option's name, as in `LabOptions`. */
  readonly option: string;
  /** What the option accepts, in words. */
  readonly accepted: string;
  /** What it got, as shown in the message. */
  readonly got: string;

  constructor(option: string, accepted: string, value: unknown) {
    const got = describe(value);
    super(`${option} must be ${accepted}, got ${got}`);
    this.name = 'RangeError';
    this.option = option;
    this.accepted = accepted;
    this.got = got;
  }
}

function oneOf<T extends string>(option: string, value: unknown, allowed: readonly T[]): T {
  if (typeof value !== 'string' || !allowed.includes(value as T)) {
    throw new LabOptionError(option, `one of ${allowed.join(', ')}`, value);
  }
  return value as T;
}

interface Rule {
  min: number;
  max?: number;
  exclusiveMin?: boolean;
  integer?: boolean;
}

function num(option: string, value: unknown, fallback: number, rule: Rule): number {
  if (value === undefined) return fallback;
  const { min, max = Number.POSITIVE_INFINITY, exclusiveMin = false, integer = false } = rule;
  const ok =
    typeof value === 'number' &&
    Number.isFinite(value) &&
    (exclusiveMin ? value > min : value >= min) &&
    value <= max &&
    (!integer || Number.isInteger(value));
  if (!ok) {
    const kind = integer ? 'an integer' : 'a number';
    const low = `${exclusiveMin ? '>' : '>='} ${min}`;
    const high = Number.isFinite(max) ? ` and <= ${max}` : '';
    throw new LabOptionError(option, `${kind} ${low}${high}`, value);
  }
  return value as number;
}

const KEYS = [
  'scenario',
  'mode',
  'strategies',
  'seed',
  'requests',
  'span',
  'peak',
  'capacity',
  'burst',
  'serviceTime',
  'rtt',
  'queue',
  'retryAfter',
  'rejectCost',
  'failureRate',
  'outages',
  'deadline',
  'attempts',
  'clients',
  'sharedStore',
  'concurrency',
  'quota',
  'window',
  'sporadic',
  'sporadicRate',
  'fleet',
  'store',
];

function outagesOf(value: unknown, fallback: readonly Outage[]): readonly Outage[] {
  if (value === undefined) return fallback;
  const accepted = 'a list of { start, end } windows in ms with 0 <= start < end';
  if (!Array.isArray(value)) throw new LabOptionError('outages', accepted, value);
  return Object.freeze(
    value.map((w: unknown) => {
      const o = w as Partial<Outage> | null;
      const ok =
        typeof o === 'object' &&
        o !== null &&
        typeof o.start === 'number' &&
        typeof o.end === 'number' &&
        Number.isFinite(o.end) &&
        o.start >= 0 &&
        o.end > o.start;
      if (!ok) throw new LabOptionError('outages', accepted, w);
      return Object.freeze({ start: o.start!, end: o.end! });
    }),
  );
}

/**
 * Validates `options` and fills in the scenario's defaults for the mode.
 * @throws LabOptionError (a RangeError) naming the option, the accepted values and the value.
 */
export function resolveLabOptions(options: LabOptions = {}): LabConfig {
  if (typeof options !== 'object' || options === null) {
    throw new LabOptionError('options', 'an object', options);
  }
  for (const key of Object.keys(options)) {
    if (!KEYS.includes(key))
      throw new LabOptionError(key, `not an option (${KEYS.join(', ')})`, key);
  }
  const o = options;
  const scenario = o.scenario === undefined ? 'overload' : oneOf('scenario', o.scenario, SCENARIOS);
  const mode = o.mode === undefined ? 'sim' : oneOf('mode', o.mode, MODES);
  const p = PRESETS[mode][scenario];
  let strategies: readonly StrategyName[] = STRATEGIES;
  if (o.strategies !== undefined) {
    const accepted = `a non-empty list of ${STRATEGIES.join(', ')}`;
    if (!Array.isArray(o.strategies) || o.strategies.length === 0) {
      throw new LabOptionError('strategies', accepted, o.strategies);
    }
    strategies = Object.freeze([
      ...new Set(o.strategies.map((s: unknown) => oneOf('strategies', s, STRATEGIES))),
    ]);
  }
  const capacity = num('capacity', o.capacity, p.server.capacity, { min: 0, exclusiveMin: true });
  const requests = num('requests', o.requests, p.requests, {
    min: 1,
    max: 10_000_000,
    integer: true,
  });
  const server: ServerOptions = Object.freeze({
    capacity,
    burst: num('burst', o.burst, p.server.burst ?? Math.max(1, capacity / 10), { min: 1 }),
    serviceTime: num('serviceTime', o.serviceTime, p.server.serviceTime, { min: 0 }),
    queue: num('queue', o.queue, p.server.queue, { min: 0, integer: true }),
    retryAfter:
      o.retryAfter === undefined
        ? p.server.retryAfter
        : oneOf('retryAfter', o.retryAfter, RETRY_AFTER_MODES),
    rejectCost: num('rejectCost', o.rejectCost, p.server.rejectCost, { min: 0, max: 1 }),
    failureRate: num('failureRate', o.failureRate, p.server.failureRate, { min: 0, max: 1 }),
    outages: outagesOf(o.outages, p.server.outages),
    quota: o.quota === undefined ? p.server.quota : oneOf('quota', o.quota, QUOTAS),
    window: num('window', o.window, p.server.window ?? 1000, { min: 1 }),
    sporadic:
      o.sporadic === undefined ? p.server.sporadic : oneOf('sporadic', o.sporadic, SPORADIC_MODES),
    sporadicRate: num('sporadicRate', o.sporadicRate, p.server.sporadicRate ?? 0, {
      min: 0,
      max: 1,
    }),
  });
  if (o.strategies === undefined && !sendsPacing(server)) strategies = UNPACED_STRATEGIES;
  const span = num('span', o.span, p.span, { min: 0 });
  const peak = num('peak', o.peak, p.peak, { min: 0, exclusiveMin: true });
  if (p.arrivals === 'burst' && o.concurrency === undefined) {
    if (span === 0)
      throw new LabOptionError('span', `a number > 0 for the ${scenario} burst`, span);
    const least = requests / (span / 1000) / capacity;
    try {
      burstProfile(requests, span, peak * capacity);
    } catch {
      const accepted = `at least ${+least.toFixed(3)} for ${requests} requests over ${span} ms at capacity ${capacity}`;
      throw new LabOptionError('peak', accepted, peak);
    }
  }
  const fleet = num('fleet', o.fleet, 1, { min: 1, max: 32, integer: true });
  const store = storeOf(o.store);
  if (isFleetRun({ fleet, store })) {
    if (mode !== 'live') {
      const [option, value] = fleet > 1 ? ['fleet', fleet] : ['store', redactUrl(store)];
      throw new LabOptionError(
        option,
        `${option === 'fleet' ? '1' : 'local'} unless mode is live (fleet runs are live only)`,
        value,
      );
    }
    if (o.strategies !== undefined && (strategies.length !== 1 || strategies[0] !== 'staunch')) {
      throw new LabOptionError(
        'strategies',
        'staunch in a fleet run (the one strategy with state to share)',
        o.strategies.join(','),
      );
    }
    strategies = Object.freeze(['staunch'] as StrategyName[]);
  }
  return Object.freeze({
    scenario,
    mode,
    strategies,
    seed: num('seed', o.seed, 1, { min: 0, max: 2 ** 32 - 1, integer: true }),
    requests,
    span,
    peak,
    arrivals: arrivalsOf(p.arrivals, o.concurrency),
    server,
    rtt: num('rtt', o.rtt, p.rtt, { min: 0 }),
    deadline: num('deadline', o.deadline, p.deadline, {
      min: 0,
      exclusiveMin: true,
      max: 3_600_000,
    }),
    attempts: num('attempts', o.attempts, p.attempts, { min: 1, max: 100, integer: true }),
    clients: Math.min(
      requests,
      num('clients', o.clients, p.clients, { min: 1, max: 100_000, integer: true }),
    ),
    sharedStore: bool('sharedStore', o.sharedStore, p.sharedStore),
    concurrency: num('concurrency', o.concurrency, p.concurrency, {
      min: 0,
      max: 10_000,
      integer: true,
    }),
    goal: p.goal,
    fleet,
    store,
  });
}

function bool(option: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw new LabOptionError(option, 'true or false', value);
  return value;
}

/** `concurrency` above 0 turns any scenario into a closed loop; 0 turns a closed one into `steady`. */
function arrivalsOf(preset: ArrivalShape, concurrency: unknown): ArrivalShape {
  if (concurrency === undefined) return preset;
  if (concurrency === 0) return preset === 'closed' ? 'steady' : preset;
  return 'closed';
}

const QUOTAS: readonly QuotaKind[] = Object.freeze(['token-bucket', 'fixed-window']);
const SPORADIC_MODES: readonly SporadicMode[] = Object.freeze(['none', 'alternate', 'random']);

function storeOf(value: unknown): string {
  if (value === undefined || value === 'local') return 'local';
  const accepted = 'local or a redis:// or rediss:// URL';
  if (typeof value !== 'string') throw new LabOptionError('store', accepted, value);
  let ok = false;
  try {
    const url = new URL(value);
    ok = (url.protocol === 'redis:' || url.protocol === 'rediss:') && url.hostname !== '';
  } catch {
    ok = false;
  }
  if (!ok) throw new LabOptionError('store', accepted, redactUrl(value));
  return value;
}

/** Whether `config` asks for a fleet run (more than one process, or a Redis store). */
export function isFleetRun(config: { readonly fleet: number; readonly store: string }): boolean {
  return config.fleet > 1 || config.store !== 'local';
}
