/**
 * The lab's options resolved: user input validated and filled in with the
 * defaults that `LAB_OPTIONS` (option-spec.ts) declares, into a frozen
 * `LabConfig`. Every error is in src/internal/validate.ts's format and
 * names the option and the value: a value of the wrong type is a
 * `TypeError`, one out of range (or not among the accepted ones) a
 * `RangeError`.
 */
import { redactUrl } from '../internal/redact.js';
import { checkNumber, checkObject, describe } from '../internal/validate.js';
import { type ArrivalShape, burstProfile } from './arrivals.js';
import {
  defaultOf,
  LAB_OPTIONS,
  type LabMode,
  type LabOptionSpec,
  type LabOptions,
  type Resolving,
} from './option-spec.js';
import { PRESETS, type ScenarioName, sendsPacing } from './scenarios.js';
import type { Outage, ServerOptions } from './server-model.js';
import { STRATEGIES, type StrategyName } from './strategies.js';

export {
  describeDefault,
  LAB_OPTIONS,
  type LabMode,
  type LabOptionKind,
  type LabOptionSpec,
  type LabOptions,
  MODES,
  RETRY_AFTER_MODES,
} from './option-spec.js';
export type { ScenarioName } from './scenarios.js';
export { HEDGE_SCENARIOS, PRESETS, SCENARIOS, STORM_SCENARIOS } from './scenarios.js';
export {
  HEDGE_STRATEGIES,
  type HedgeStrategyName,
  type LoopName,
  STORM_STRATEGIES,
  STRATEGIES,
  type StrategyName,
  UNPACED_STRATEGIES,
} from './strategies.js';

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
  /** `hedge-fixed`'s delay, ms. */
  readonly hedgeDelay: number;
  /** Processes of a fleet run (1: the ordinary in-process run, unless `store` is Redis). */
  readonly fleet: number;
  /** `'local'` or the Redis URL as given (print it with `redactUrl`). */
  readonly store: string;
}

const KEYS = Object.keys(LAB_OPTIONS) as (keyof LabOptions)[];

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
  const allowed = (LAB_OPTIONS[key] as LabOptionSpec).choices as readonly T[];
  return value === undefined ? fallback : oneOf(key, value, allowed);
}

/** A `number` / `integer` option within its declared bounds, or `fallback` when left out. */
function num(key: keyof LabOptions, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  const spec: LabOptionSpec = LAB_OPTIONS[key];
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
  const scenario = choice('scenario', o.scenario, LAB_OPTIONS.scenario.default!);
  const mode = choice('mode', o.mode, LAB_OPTIONS.mode.default!);
  const p = PRESETS[mode][scenario];
  // What a derived default may read, filled in as the options it reads are resolved.
  const from = { capacity: 0, paced: false, hedging: p.hedging, serviceTime: 0 };
  const def = <K extends keyof LabOptions>(key: K) => defaultOf(key, p, from satisfies Resolving);
  const capacity = num('capacity', o.capacity, def('capacity'));
  from.capacity = capacity;
  const requests = num('requests', o.requests, def('requests'));
  const server: ServerOptions = Object.freeze({
    capacity,
    burst: num('burst', o.burst, def('burst')),
    serviceTime: num('serviceTime', o.serviceTime, def('serviceTime')),
    queue: num('queue', o.queue, def('queue')),
    retryAfter: choice('retryAfter', o.retryAfter, def('retryAfter')),
    rejectCost: num('rejectCost', o.rejectCost, def('rejectCost')),
    failureRate: num('failureRate', o.failureRate, def('failureRate')),
    outages: outagesOf(o.outages, def('outages')),
    quota: choice('quota', o.quota, def('quota')),
    window: num('window', o.window, def('window')),
    sporadic: choice('sporadic', o.sporadic, def('sporadic')),
    sporadicRate: num('sporadicRate', o.sporadicRate, def('sporadicRate')),
    tailRate: num('tailRate', o.tailRate, def('tailRate')),
    tailFactor: num('tailFactor', o.tailFactor, def('tailFactor')),
    cores: num('cores', o.cores, def('cores')),
  });
  from.paced = sendsPacing(server);
  from.serviceTime = server.serviceTime;
  let strategies = o.strategies === undefined ? def('strategies') : strategiesOf(o.strategies);
  const span = num('span', o.span, def('span'));
  const peak = num('peak', o.peak, def('peak'));
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
  const fleet = num('fleet', o.fleet, def('fleet'));
  const store = o.store === undefined ? def('store') : storeOf(o.store);
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
    seed: num('seed', o.seed, def('seed')),
    requests,
    span,
    peak,
    arrivals: arrivalsOf(p.arrivals, o.concurrency),
    server,
    rtt: num('rtt', o.rtt, def('rtt')),
    deadline: num('deadline', o.deadline, def('deadline')),
    attempts: num('attempts', o.attempts, def('attempts')),
    clients: Math.min(requests, num('clients', o.clients, def('clients'))),
    sharedStore: bool('sharedStore', o.sharedStore, def('sharedStore')),
    concurrency: num('concurrency', o.concurrency, def('concurrency')),
    goal: p.goal,
    hedgeDelay: num('hedgeDelay', o.hedgeDelay, def('hedgeDelay')),
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
  if (value === 'local') return value;
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
