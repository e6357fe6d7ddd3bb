/**
 * The lab's options: one declaration (`LAB_OPTIONS`: kind, bounds, choices,
 * help line and where each default comes from), the scenarios' defaults per
 * mode, and the validation that turns user input into a frozen `LabConfig`.
 * The CLI's flags and their help are derived from the same declaration.
 * Every error is in src/internal/validate.ts's format and names the option
 * and the value: a value of the wrong type is a `TypeError`, one out of range
 * (or not among the accepted ones) a `RangeError`.
 */
import { redactUrl } from '../internal/redact.js';
import { checkNumber, checkObject, describe, type NumberRule } from '../internal/validate.js';
import { type ArrivalShape, burstProfile } from './arrivals.js';
import { PRESETS, type Preset, SCENARIOS, type ScenarioName, sendsPacing } from './scenarios.js';
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
const QUOTAS: readonly QuotaKind[] = Object.freeze(['token-bucket', 'fixed-window']);
const SPORADIC_MODES: readonly SporadicMode[] = Object.freeze(['none', 'alternate', 'random']);

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

/** How a lab option is read, in the API and on the command line. */
export type LabOptionKind =
  | 'number'
  | 'integer'
  | 'choice'
  | 'list'
  | 'outages'
  | 'boolean'
  | 'store';

/** The declaration of one lab option: what it accepts and where its default comes from. */
export interface LabOptionSpec {
  readonly kind: LabOptionKind;
  /** One line for `staunch lab --help`. */
  readonly help: string;
  /** The value's placeholder on the command line (`MS`, `N`). */
  readonly value?: string;
  /** The command-line flag, when not the option's name in kebab case. */
  readonly flag?: string;
  /** `number` / `integer`: the bounds. */
  readonly rule?: NumberRule;
  /** `choice` / `list`: the accepted values. */
  readonly choices?: readonly string[];
  /** The default, from the scenario's preset (per mode). */
  readonly preset?: (p: Preset) => unknown;
  /** The default when no preset gives one. */
  readonly default?: string | number | boolean;
  /** The default in words, where the preset gives none (`capacity / 10`) or it is computed. */
  readonly unset?: string;
}

/** Every lab option, in the order `--help` lists them. Adding a `LabOptions` key needs an entry here. */
export const LAB_OPTIONS: { readonly [K in keyof Required<LabOptions>]: LabOptionSpec } = {
  scenario: {
    kind: 'choice',
    value: 'NAME',
    choices: SCENARIOS,
    help: SCENARIOS.join(' | '),
    default: 'overload',
  },
  mode: {
    kind: 'choice',
    value: 'MODE',
    choices: MODES,
    help: 'sim (virtual time) | live (real server on 127.0.0.1)',
    default: 'sim',
  },
  strategies: {
    kind: 'list',
    value: 'LIST',
    choices: STRATEGIES,
    help: `comma-separated, of: ${STRATEGIES.join(', ')} (+ra: the loop honours Retry-After)`,
    unset: 'all; without pacing from the upstream, no +ra',
  },
  seed: {
    kind: 'integer',
    value: 'N',
    rule: { min: 0, max: 2 ** 32 - 1 },
    help: 'seed of every random draw',
    default: 1,
  },
  requests: {
    kind: 'integer',
    value: 'N',
    rule: { min: 1, max: 10_000_000 },
    help: 'logical requests',
    preset: (p) => p.requests,
  },
  span: {
    kind: 'number',
    value: 'MS',
    rule: { min: 0 },
    help: 'ms over which they arrive (0 = all at once)',
    preset: (p) => p.span,
  },
  peak: {
    kind: 'number',
    value: 'X',
    rule: { min: 0, exclusiveMin: true },
    help: 'overload: peak demand as a multiple of capacity',
    preset: (p) => p.peak,
  },
  capacity: {
    kind: 'number',
    value: 'RPS',
    rule: { min: 0, exclusiveMin: true },
    help: "the upstream's requests per second",
    preset: (p) => p.server.capacity,
  },
  burst: {
    kind: 'number',
    value: 'N',
    rule: { min: 1 },
    help: "the upstream's token bucket size",
    preset: (p) => p.server.burst,
    unset: 'capacity / 10',
  },
  serviceTime: {
    kind: 'number',
    value: 'MS',
    rule: { min: 0 },
    help: 'ms from start of service to response',
    preset: (p) => p.server.serviceTime,
  },
  rtt: {
    kind: 'number',
    value: 'MS',
    rule: { min: 0 },
    help: 'round trip, ms (sim only)',
    preset: (p) => p.rtt,
  },
  queue: {
    kind: 'integer',
    value: 'N',
    rule: { min: 0 },
    help: 'requests that may wait at the upstream instead of a 429',
    preset: (p) => p.server.queue,
  },
  retryAfter: {
    kind: 'choice',
    value: 'MODE',
    choices: RETRY_AFTER_MODES,
    help: `on a 429: ${RETRY_AFTER_MODES.join(' | ')} (ms = retry-after-ms)`,
    preset: (p) => p.server.retryAfter,
  },
  rejectCost: {
    kind: 'number',
    value: 'F',
    rule: { min: 0, max: 1 },
    help: 'share of capacity one refusal consumes, 0..1',
    preset: (p) => p.server.rejectCost,
  },
  failureRate: {
    kind: 'number',
    value: 'F',
    rule: { min: 0, max: 1 },
    help: 'probability of a random 503, 0..1',
    preset: (p) => p.server.failureRate,
  },
  outages: {
    kind: 'outages',
    flag: 'outage',
    value: 'FROM-TO',
    help: 'a 503 window in ms, repeatable; "none" for none',
    preset: (p) => p.server.outages,
  },
  deadline: {
    kind: 'number',
    value: 'MS',
    rule: { min: 0, exclusiveMin: true, max: 3_600_000 },
    help: 'deadline of each logical request, > 0',
    preset: (p) => p.deadline,
  },
  attempts: {
    kind: 'integer',
    value: 'N',
    rule: { min: 1, max: 100 },
    help: 'attempt cap per request, first included',
    preset: (p) => p.attempts,
  },
  clients: {
    kind: 'integer',
    value: 'N',
    rule: { min: 1, max: 100_000 },
    help: 'independent staunch clients (round robin)',
    preset: (p) => p.clients,
  },
  sharedStore: {
    kind: 'boolean',
    help: 'the clients share one state store (a fleet in one process)',
    preset: (p) => p.sharedStore,
  },
  concurrency: {
    kind: 'integer',
    value: 'K',
    rule: { min: 0, max: 10_000 },
    help: 'closed loop: K clients sending back to back for the span (0 = arrival schedule)',
    preset: (p) => p.concurrency,
  },
  quota: {
    kind: 'choice',
    value: 'KIND',
    choices: QUOTAS,
    help: 'token-bucket | fixed-window (capacity × window per window)',
    preset: (p) => p.server.quota,
  },
  window: {
    kind: 'number',
    value: 'MS',
    rule: { min: 1 },
    help: 'fixed-window length',
    preset: (p) => p.server.window,
    unset: '1000',
  },
  sporadic: {
    kind: 'choice',
    value: 'MODE',
    choices: SPORADIC_MODES,
    help: 'none | alternate (404, 429 Retry-After: 0) | random (429 Retry-After: 0)',
    preset: (p) => p.server.sporadic,
  },
  sporadicRate: {
    kind: 'number',
    value: 'F',
    rule: { min: 0, max: 1 },
    help: 'sporadic random: share of 429s, 0..1',
    preset: (p) => p.server.sporadicRate,
    unset: '0',
  },
  fleet: {
    kind: 'integer',
    value: 'P',
    rule: { min: 1, max: 32 },
    help: 'live only: P processes (1-32) share the requests and one upstream; staunch strategy only',
    default: 1,
  },
  store: {
    kind: 'store',
    value: 'STORE',
    help: 'fleet: local | redis://HOST:PORT (runs local, then shared through Redis, and compares)',
    default: 'local',
  },
};

const KEYS = Object.keys(LAB_OPTIONS) as (keyof LabOptions)[];

/** A default as the help shows it: `on`/`off`, outage windows as `FROM-TO`, `none` for no window. */
function shown(spec: LabOptionSpec, value: unknown): string {
  if (value === undefined) return spec.unset ?? 'none';
  if (typeof value === 'boolean') return value ? 'on' : 'off';
  if (Array.isArray(value)) {
    const windows = value as readonly Outage[];
    return windows.length === 0 ? 'none' : windows.map((w) => `${w.start}-${w.end}`).join(' ');
  }
  return String(value);
}

/**
 * The default of `key` in words, from the declaration and the presets: the
 * `overload` scenario's in sim, then the scenarios that differ (in sim), or
 * "per scenario" when more than three do ("per scenario and mode" when
 * `overload` differs between the modes). `staunch lab --help` prints it.
 */
export function describeDefault(key: keyof LabOptions): string {
  const spec = LAB_OPTIONS[key];
  const preset = spec.preset;
  if (preset === undefined) {
    return spec.default === undefined ? (spec.unset ?? 'none') : shown(spec, spec.default);
  }
  const of = (mode: LabMode, scenario: ScenarioName) =>
    shown(spec, preset(PRESETS[mode][scenario]));
  const base = of('sim', 'overload');
  const live = of('live', 'overload');
  if (live !== base) return `per scenario and mode (overload: ${base} sim, ${live} live)`;
  const others = SCENARIOS.filter((s) => of('sim', s) !== base);
  if (others.length === 0) return base;
  if (others.length > 3) return `per scenario (overload: ${base})`;
  return `${base} (${others.map((s) => `${s}: ${of('sim', s)}`).join(', ')})`;
}

/** `option must be accepted, got value`: a TypeError (wrong type) or a RangeError (wrong value). */
function fail(
  kind: typeof TypeError | typeof RangeError,
  option: string,
  accepted: string,
  value: unknown,
): never {
  throw new kind(`${option} must be ${accepted}, got ${describe(value)}`);
}

function oneOf<T extends string>(option: string, value: unknown, allowed: readonly T[]): T {
  const accepted = `one of ${allowed.join(', ')}`;
  if (typeof value !== 'string') fail(TypeError, option, accepted, value);
  if (!allowed.includes(value as T)) fail(RangeError, option, accepted, value);
  return value as T;
}

/** A `choice` option, or `fallback` when left out. */
function choice<T extends string>(key: keyof LabOptions, value: unknown, fallback: T): T {
  const allowed = LAB_OPTIONS[key].choices as readonly T[];
  return value === undefined ? fallback : oneOf(key, value, allowed);
}

/** A `number` / `integer` option within its declared bounds, or `fallback` when left out. */
function num(key: keyof LabOptions, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  const spec = LAB_OPTIONS[key];
  return checkNumber(key, value, { ...spec.rule, integer: spec.kind === 'integer' });
}

function outagesOf(value: unknown, fallback: readonly Outage[]): readonly Outage[] {
  if (value === undefined) return fallback;
  const accepted = 'a list of { start, end } windows in ms with 0 <= start < end';
  if (!Array.isArray(value)) fail(TypeError, 'outages', accepted, value);
  return Object.freeze(
    value.map((w: unknown) => {
      const o = w as Partial<Outage> | null;
      const numbers =
        typeof o === 'object' &&
        o !== null &&
        typeof o.start === 'number' &&
        typeof o.end === 'number' &&
        !Number.isNaN(o.start) &&
        !Number.isNaN(o.end);
      if (!numbers) fail(TypeError, 'outages', accepted, w);
      const { start, end } = o as Outage;
      if (!(Number.isFinite(end) && start >= 0 && end > start)) {
        fail(RangeError, 'outages', accepted, w);
      }
      return Object.freeze({ start, end });
    }),
  );
}

function strategiesOf(value: unknown): readonly StrategyName[] {
  const accepted = `a non-empty list of ${STRATEGIES.join(', ')}`;
  if (!Array.isArray(value)) fail(TypeError, 'strategies', accepted, value);
  if (value.length === 0) fail(RangeError, 'strategies', accepted, value);
  return Object.freeze([...new Set(value.map((s: unknown) => oneOf('strategies', s, STRATEGIES)))]);
}

/**
 * Validates `options` and fills in the scenario's defaults for the mode.
 * @throws TypeError for an option of the wrong type (or an unknown one),
 *   RangeError for a value out of range or not among the accepted ones;
 *   each names the option, what it accepts and the value.
 */
export function resolveLabOptions(options: LabOptions = {}): LabConfig {
  // The library's one format for an unknown key (a TypeError naming it and the known ones).
  const o = checkObject('lab options', options, KEYS) as LabOptions;
  const scenario = choice('scenario', o.scenario, 'overload' as ScenarioName);
  const mode = choice('mode', o.mode, 'sim' as LabMode);
  const p = PRESETS[mode][scenario];
  let strategies = o.strategies === undefined ? STRATEGIES : strategiesOf(o.strategies);
  const capacity = num('capacity', o.capacity, p.server.capacity);
  const requests = num('requests', o.requests, p.requests);
  const server: ServerOptions = Object.freeze({
    capacity,
    burst: num('burst', o.burst, p.server.burst ?? Math.max(1, capacity / 10)),
    serviceTime: num('serviceTime', o.serviceTime, p.server.serviceTime),
    queue: num('queue', o.queue, p.server.queue),
    retryAfter: choice('retryAfter', o.retryAfter, p.server.retryAfter),
    rejectCost: num('rejectCost', o.rejectCost, p.server.rejectCost),
    failureRate: num('failureRate', o.failureRate, p.server.failureRate),
    outages: outagesOf(o.outages, p.server.outages),
    quota: choice('quota', o.quota, p.server.quota ?? 'token-bucket'),
    window: num('window', o.window, p.server.window ?? 1000),
    sporadic: choice('sporadic', o.sporadic, p.server.sporadic ?? 'none'),
    sporadicRate: num('sporadicRate', o.sporadicRate, p.server.sporadicRate ?? 0),
  });
  if (o.strategies === undefined && !sendsPacing(server)) strategies = UNPACED_STRATEGIES;
  const span = num('span', o.span, p.span);
  const peak = num('peak', o.peak, p.peak);
  if (p.arrivals === 'burst' && o.concurrency === undefined) {
    if (span === 0) fail(RangeError, 'span', `a number > 0 for the ${scenario} burst`, span);
    const least = requests / (span / 1000) / capacity;
    try {
      burstProfile(requests, span, peak * capacity);
    } catch {
      const accepted = `at least ${+least.toFixed(3)} for ${requests} requests over ${span} ms at capacity ${capacity}`;
      fail(RangeError, 'peak', accepted, peak);
    }
  }
  const fleet = num('fleet', o.fleet, 1);
  const store = storeOf(o.store);
  if (isFleetRun({ fleet, store })) {
    if (mode !== 'live') {
      const [option, value] = fleet > 1 ? ['fleet', fleet] : ['store', redactUrl(store)];
      const accepted = `${option === 'fleet' ? '1' : 'local'} unless mode is live (fleet runs are live only)`;
      fail(RangeError, option, accepted, value);
    }
    if (o.strategies !== undefined && (strategies.length !== 1 || strategies[0] !== 'staunch')) {
      const accepted = 'staunch in a fleet run (the one strategy with state to share)';
      fail(RangeError, 'strategies', accepted, o.strategies.join(','));
    }
    strategies = Object.freeze(['staunch'] as StrategyName[]);
  }
  return Object.freeze({
    scenario,
    mode,
    strategies,
    seed: num('seed', o.seed, 1),
    requests,
    span,
    peak,
    arrivals: arrivalsOf(p.arrivals, o.concurrency),
    server,
    rtt: num('rtt', o.rtt, p.rtt),
    deadline: num('deadline', o.deadline, p.deadline),
    attempts: num('attempts', o.attempts, p.attempts),
    clients: Math.min(requests, num('clients', o.clients, p.clients)),
    sharedStore: bool('sharedStore', o.sharedStore, p.sharedStore),
    concurrency: num('concurrency', o.concurrency, p.concurrency),
    goal: p.goal,
    fleet,
    store,
  });
}

function bool(option: keyof LabOptions, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') fail(TypeError, option, 'true or false', value);
  return value;
}

/** `concurrency` above 0 turns any scenario into a closed loop; 0 turns a closed one into `steady`. */
function arrivalsOf(preset: ArrivalShape, concurrency: unknown): ArrivalShape {
  if (concurrency === undefined) return preset;
  if (concurrency === 0) return preset === 'closed' ? 'steady' : preset;
  return 'closed';
}

function storeOf(value: unknown): string {
  if (value === undefined || value === 'local') return 'local';
  const accepted = 'local or a redis:// or rediss:// URL';
  if (typeof value !== 'string') fail(TypeError, 'store', accepted, value);
  let ok = false;
  try {
    const url = new URL(value);
    ok = (url.protocol === 'redis:' || url.protocol === 'rediss:') && url.hostname !== '';
  } catch {
    ok = false;
  }
  if (!ok) fail(RangeError, 'store', accepted, redactUrl(value));
  return value;
}

/** Whether `config` asks for a fleet run (more than one process, or a Redis store). */
export function isFleetRun(config: { readonly fleet: number; readonly store: string }): boolean {
  return config.fleet > 1 || config.store !== 'local';
}
