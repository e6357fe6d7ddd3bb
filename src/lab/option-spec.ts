/**
 * The lab's options declared once: `LAB_OPTIONS` gives each option's kind,
 * bounds, choices, help line and its default (a constant, the scenario's
 * preset for the mode, or computed), and the `LabOptions` type it is
 * checked against. The resolver (options.ts), the CLI's flags and their
 * `--help` (src/cli/lab-command.ts) read their defaults from here and
 * nowhere else.
 */
import type { NumberRule } from '../internal/validate.js';
import { PRESETS, type Preset, SCENARIOS, type ScenarioName } from './scenarios.js';
import type { Outage, QuotaKind, RetryAfterMode, SporadicMode } from './server-model.js';
import {
  HEDGE_STRATEGIES,
  STORM_STRATEGIES,
  STRATEGIES,
  type StrategyName,
  UNPACED_STRATEGIES,
} from './strategies.js';

/** Virtual time (deterministic) or a real server on loopback. */
export type LabMode = 'sim' | 'live';

/** The two modes. */
export const MODES: readonly LabMode[] = Object.freeze(['sim', 'live']);
/** How a 429 may announce its wait. */
export const RETRY_AFTER_MODES: readonly RetryAfterMode[] = Object.freeze([
  'none',
  'seconds',
  'ms',
]);
/** How the upstream may count its capacity. */
export const QUOTAS: readonly QuotaKind[] = Object.freeze(['token-bucket', 'fixed-window']);
/** The sporadic 429 modes. */
export const SPORADIC_MODES: readonly SporadicMode[] = Object.freeze([
  'none',
  'alternate',
  'random',
]);

/**
 * Options of a lab run; anything left out takes its default from
 * {@link LAB_OPTIONS} (a constant, or the scenario's preset for the mode),
 * which `staunch lab --help` prints. No default is written here.
 */
export interface LabOptions {
  /** The scenario: its upstream, its clients and their defaults. */
  scenario?: ScenarioName | undefined;
  /** Virtual time (`sim`) or a real server on loopback (`live`). */
  mode?: LabMode | undefined;
  /** The strategies compared, in the table's order. */
  strategies?: readonly StrategyName[] | undefined;
  /** Seed of every random draw (arrivals, jitter, the server's failures). */
  seed?: number | undefined;
  /** Logical requests. */
  requests?: number | undefined;
  /** ms over which they arrive (0 = all at once). */
  span?: number | undefined;
  /** Overload: peak demand as a multiple of capacity. */
  peak?: number | undefined;
  /** The upstream's requests per second. */
  capacity?: number | undefined;
  /** Token-bucket size. */
  burst?: number | undefined;
  /** ms from start of service to response. */
  serviceTime?: number | undefined;
  /** Round trip between client and upstream, ms (sim only; live has the real one). */
  rtt?: number | undefined;
  /** Requests that may queue at the upstream instead of being refused. */
  queue?: number | undefined;
  /** How a 429 announces when to return. */
  retryAfter?: RetryAfterMode | undefined;
  /** Share of a request's capacity that refusing one consumes. */
  rejectCost?: number | undefined;
  /** Probability that a served request fails with 503. */
  failureRate?: number | undefined;
  /** Windows answering 503, ms from the run's start. */
  outages?: readonly Outage[] | undefined;
  /** Deadline of each logical request, ms. */
  deadline?: number | undefined;
  /** Attempt cap per logical request, the first included. */
  attempts?: number | undefined;
  /** Independent staunch clients the requests are spread over (round robin). */
  clients?: number | undefined;
  /** The `clients` share one state store (the fleet case, in one process). */
  sharedStore?: boolean | undefined;
  /**
   * A closed loop of this many clients, each sending its next request when the
   * previous one settled, until `span` ms (or `requests` sent); 0 = the
   * scenario's arrival schedule.
   */
  concurrency?: number | undefined;
  /** How the upstream counts its capacity. */
  quota?: QuotaKind | undefined;
  /** Fixed window length, ms. */
  window?: number | undefined;
  /** 429s that do not depend on the rate. */
  sporadic?: SporadicMode | undefined;
  /** `sporadic: 'random'`: the share of 429s. */
  sporadicRate?: number | undefined;
  /** Probability that a served request is slow (`tailFactor` × the service time). */
  tailRate?: number | undefined;
  /** How many times the service time a slow request takes. */
  tailFactor?: number | undefined;
  /** Cores the requests in service share (processor sharing); 0 = each its own service time. */
  cores?: number | undefined;
  /** `hedge-fixed`: ms after which it sends its one hedge. */
  hedgeDelay?: number | undefined;
  /**
   * Live only: processes the requests are spread over (round robin), all
   * against the one upstream; each runs the `staunch` strategy. Above 1 (or
   * with a Redis `store`) the run is a fleet run: see docs/lab.md. Integer 1–32.
   */
  fleet?: number | undefined;
  /**
   * Fleet runs: `'local'` (each process keeps its own state) or a
   * `redis://` / `rediss://` URL: then the fleet runs twice, with local state
   * and with the state shared through that Redis, and the result compares them.
   */
  store?: string | undefined;
}

/** How a lab option is read, in the API and on the command line. */
export type LabOptionKind =
  | 'number'
  | 'integer'
  | 'choice'
  | 'list'
  | 'outages'
  | 'boolean'
  | 'store';

/**
 * The declaration of one lab option of type `T`: what it accepts and its
 * default, in exactly one of three forms: `default` (a constant),
 * `preset` (the scenario's, per mode; `undefined` there falls to `derive`),
 * or `derive` (computed from what is resolved before it, with its words
 * for `--help`).
 */
export interface LabOptionSpec<T = unknown> {
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
  readonly preset?: (p: Preset) => T | undefined;
  /** The default: a constant. */
  readonly default?: T;
  /** The default computed from the options resolved before it, and those words for `--help`. */
  readonly derive?: { readonly words: string; readonly of: (from: Resolving) => T };
}

/** What a derived default may read: the options resolved before it. */
export interface Resolving {
  readonly capacity: number;
  /** Whether the upstream sends pacing headers (`sendsPacing`). */
  readonly paced: boolean;
  /** Whether the scenario is a hedging one (its preset's `hedging`). */
  readonly hedging: boolean;
  /** The upstream's service time, ms. */
  readonly serviceTime: number;
}

/** Every lab option, in the order `--help` lists them. Adding a `LabOptions` key needs an entry here. */
export const LAB_OPTIONS: {
  readonly [K in keyof LabOptions]-?: LabOptionSpec<Exclude<LabOptions[K], undefined>>;
} = {
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
    derive: {
      words: `the loops and staunch, no +ra without pacing from the upstream; hedging scenarios: ${HEDGE_STRATEGIES.join(', ')}`,
      of: ({ paced, hedging }) =>
        hedging ? HEDGE_STRATEGIES : paced ? STORM_STRATEGIES : UNPACED_STRATEGIES,
    },
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
    derive: { words: 'capacity / 10', of: ({ capacity }) => Math.max(1, capacity / 10) },
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
  },
  tailRate: {
    kind: 'number',
    value: 'F',
    rule: { min: 0, max: 1 },
    help: 'share of slow responses (tail-factor × the service time), 0..1',
    preset: (p) => p.server.tailRate,
  },
  tailFactor: {
    kind: 'number',
    value: 'X',
    rule: { min: 1 },
    help: 'a slow response takes X × the service time',
    preset: (p) => p.server.tailFactor,
  },
  cores: {
    kind: 'integer',
    value: 'N',
    rule: { min: 0, max: 100_000 },
    help: 'requests in service share N cores, slowing past N at once (0 = no sharing)',
    preset: (p) => p.server.cores,
  },
  hedgeDelay: {
    kind: 'number',
    value: 'MS',
    rule: { min: 0, exclusiveMin: true },
    help: 'hedge-fixed: ms after which it sends its hedge',
    derive: { words: '2 × service time', of: ({ serviceTime }) => 2 * serviceTime },
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

/**
 * The default of `key` for a run of preset `p`: the preset's, else the
 * derived one, else the constant (exactly one applies; see `LabOptionSpec`).
 */
export function defaultOf<K extends keyof LabOptions>(
  key: K,
  p: Preset,
  from: Resolving,
): Exclude<LabOptions[K], undefined> {
  // The mapped type pairs each key with its spec; TypeScript cannot follow that through `K`.
  const spec = LAB_OPTIONS[key] as unknown as LabOptionSpec<Exclude<LabOptions[K], undefined>>;
  const preset = spec.preset?.(p);
  if (preset !== undefined) return preset;
  if (spec.derive !== undefined) return spec.derive.of(from);
  if (spec.default === undefined) throw new Error(`lab: ${key} has no default`);
  return spec.default;
}

/** A default as the help shows it: `on`/`off`, outage windows as `FROM-TO`, `none` for no window. */
function shown(spec: LabOptionSpec, value: unknown): string {
  if (value === undefined) return spec.derive?.words ?? 'none';
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
  const spec: LabOptionSpec = LAB_OPTIONS[key];
  const preset = spec.preset;
  if (preset === undefined) return shown(spec, spec.default);
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
