/**
 * The lab's scenarios: each one an upstream and a client population, with
 * defaults per mode. Sim: open-loop scenarios at 100 000 requests (the
 * reference burst peaks at 4.9 × a 2 000 req/s quota), the default
 * `overload` at half that scale; live: the same shapes scaled down so that
 * a run on loopback stays short and bounded.
 * docs/lab.md describes every one.
 */
import type { ArrivalShape } from './arrivals.js';
import type { Outage, ServerOptions } from './server-model.js';

/** The scenarios the lab knows. */
export type ScenarioName =
  | 'overload'
  | 'window-quota'
  | 'outage'
  | 'outage-20'
  | 'flapping'
  | 'flaky'
  | 'herd'
  | 'sequential'
  | 'sequential-random'
  | 'quota-4s'
  | 'fleet'
  | 'latency-tail'
  | 'slow-under-load';

/** The storm scenarios, in the order the help and the matrix list them: the matrix runs these. */
export const STORM_SCENARIOS: readonly ScenarioName[] = Object.freeze([
  'overload',
  'window-quota',
  'outage',
  'outage-20',
  'flapping',
  'flaky',
  'herd',
  'sequential',
  'sequential-random',
  'quota-4s',
  'fleet',
]);
/** The hedging scenarios: a slow tail, an upstream that slows under load (their own verdict). */
export const HEDGE_SCENARIOS: readonly ScenarioName[] = Object.freeze([
  'latency-tail',
  'slow-under-load',
]);
/** Every scenario, in the order the help lists them. */
export const SCENARIOS: readonly ScenarioName[] = Object.freeze([
  ...STORM_SCENARIOS,
  ...HEDGE_SCENARIOS,
]);

/** One line per scenario, for `--help` (docs/lab.md has the details). */
export const SCENARIO_SUMMARY: Readonly<Record<ScenarioName, string>> = {
  overload: 'a burst peaking at 4.9 × a token-bucket quota',
  'window-quota': 'the same burst against a fixed-window quota with Retry-After and RateLimit-*',
  outage: '503 for 15 s, 60 s deadlines',
  'outage-20': '503 for 20 s, 60 s deadlines',
  flapping: '2 s of 503, 3 s up, six times',
  flaky: '5 % random 503',
  herd: 'one request per client, all failing at the same instant',
  sequential: 'one client, one request at a time; alternately 404 and 429 Retry-After: 0',
  'sequential-random': 'one client, one request at a time; 3 % 429 Retry-After: 0',
  'quota-4s': '30 closed-loop clients for 4 s against 40 req/s (burst 5)',
  fleet: 'the overload burst over 8 clients sharing one state store',
  'latency-tail': '5 % of responses take 20 × the median',
  'slow-under-load': 'steady demand at 90 % of an upstream that slows as requests pile up',
};

/** What a scenario fixes beyond the server: everything `LabConfig` has but the run's choices. */
export interface Preset {
  readonly arrivals: ArrivalShape;
  readonly requests: number;
  readonly span: number;
  readonly peak: number;
  readonly rtt: number;
  readonly deadline: number;
  readonly attempts: number;
  readonly clients: number;
  /** Closed loop: clients sending back to back (0: open loop, arrivals on a schedule). */
  readonly concurrency: number;
  /** The clients share one state store (a fleet sharing its policy state). */
  readonly sharedStore: boolean;
  /** The share of the optimum staunch must reach in the matrix's verdict. */
  readonly goal: number;
  /** A hedging scenario: its strategies are no hedge, the naive hedge and staunch's hedge. */
  readonly hedging: boolean;
  readonly server: Required<Omit<ServerOptions, 'burst'>> & { readonly burst?: number };
}

const SERVER: Required<Omit<ServerOptions, 'burst' | 'capacity'>> = {
  serviceTime: 50,
  queue: 0,
  retryAfter: 'none',
  rejectCost: 0.1,
  outages: [],
  failureRate: 0,
  quota: 'token-bucket',
  window: 1000,
  sporadic: 'none',
  sporadicRate: 0,
  tailRate: 0,
  tailFactor: 20,
  cores: 0,
};
const CLIENT = {
  rtt: 2,
  deadline: 60_000,
  attempts: 6,
  clients: 1,
  peak: 4.9,
  concurrency: 0,
  sharedStore: false,
  goal: 0.97,
  hedging: false,
};

function preset(
  arrivals: ArrivalShape,
  requests: number,
  span: number,
  server: Partial<ServerOptions> & { capacity: number },
  extra: Partial<Omit<Preset, 'server'>> = {},
): Preset {
  return { ...CLIENT, arrivals, requests, span, server: { ...SERVER, ...server }, ...extra };
}

/** Down for `down` ms, up for `up` ms, `cycles` times from `from`. */
export function flapping(from: number, down: number, up: number, cycles: number): Outage[] {
  return Array.from({ length: cycles }, (_, k) => ({
    start: from + k * (down + up),
    end: from + k * (down + up) + down,
  }));
}

const WINDOW = { quota: 'fixed-window', retryAfter: 'seconds', rejectCost: 0 } as const;
const SEQUENTIAL = { concurrency: 1 } as const;
const FAST = { capacity: 10_000, burst: 1_000, serviceTime: 5 } as const;
const QUOTA_4S = { capacity: 40, burst: 5, retryAfter: 'seconds', rejectCost: 0 } as const;
const OUTAGE_GOAL = { goal: 0.95 };
const HEDGING = { hedging: true } as const;
/** A quota the hedging scenarios never reach: their upstream is slow, not refusing. */
const UNLIMITED = { capacity: 100_000 } as const;
/** 5 % of the responses 20 × the 50 ms median: the p99 is the tail's. */
const TAIL = { ...UNLIMITED, tailRate: 0.05, tailFactor: 20 } as const;
/** 8 cores, 50 ms a request: 160 requests a second at most, slower as more share them. */
const SHARED = { ...UNLIMITED, cores: 8 } as const;

/** Defaults of each scenario, per mode. */
export const PRESETS: Readonly<Record<'sim' | 'live', Readonly<Record<ScenarioName, Preset>>>> = {
  sim: {
    // Half the other bursts' scale, the same shape: the figures match theirs (docs/lab.md says
    // why), in half the time and memory, which is what `npm run lab` runs.
    overload: preset('burst', 50_000, 60_000, { capacity: 1_000 }),
    'window-quota': preset('burst', 100_000, 60_000, { capacity: 2_000, ...WINDOW }),
    outage: preset(
      'steady',
      100_000,
      60_000,
      { capacity: 3_333, outages: [{ start: 10_000, end: 25_000 }] },
      OUTAGE_GOAL,
    ),
    'outage-20': preset('steady', 100_000, 60_000, {
      capacity: 3_333,
      outages: [{ start: 10_000, end: 30_000 }],
    }),
    flapping: preset('steady', 100_000, 60_000, {
      capacity: 3_333,
      outages: flapping(10_000, 2_000, 3_000, 6),
    }),
    flaky: preset('steady', 100_000, 40_000, { capacity: 5_000, failureRate: 0.05 }),
    herd: preset(
      'instant',
      1_000,
      0,
      { capacity: 500, outages: [{ start: 0, end: 2_000 }] },
      { clients: 1_000 },
    ),
    sequential: preset('closed', 200, 600_000, { ...FAST, sporadic: 'alternate' }, SEQUENTIAL),
    'sequential-random': preset(
      'closed',
      1_000,
      600_000,
      { ...FAST, sporadic: 'random', sporadicRate: 0.03 },
      SEQUENTIAL,
    ),
    'quota-4s': preset('closed', 100_000, 4_000, QUOTA_4S, { concurrency: 30 }),
    fleet: preset('burst', 100_000, 60_000, { capacity: 2_000 }, { clients: 8, sharedStore: true }),
    'latency-tail': preset('steady', 20_000, 60_000, TAIL, HEDGING),
    // 0.9 × 160/s for a minute.
    'slow-under-load': preset('steady', 8_640, 60_000, SHARED, { ...HEDGING, deadline: 5_000 }),
  },
  live: {
    overload: preset('burst', 2_000, 10_000, { capacity: 200 }),
    'window-quota': preset('burst', 2_000, 10_000, { capacity: 200, ...WINDOW }),
    outage: preset(
      'steady',
      1_200,
      20_000,
      { capacity: 120, outages: [{ start: 5_000, end: 10_000 }] },
      OUTAGE_GOAL,
    ),
    'outage-20': preset('steady', 1_200, 20_000, {
      capacity: 120,
      outages: [{ start: 5_000, end: 12_000 }],
    }),
    flapping: preset('steady', 1_000, 10_000, {
      capacity: 200,
      outages: flapping(2_000, 1_000, 1_500, 3),
    }),
    flaky: preset('steady', 1_000, 10_000, { capacity: 200, failureRate: 0.05 }),
    herd: preset(
      'instant',
      500,
      0,
      { capacity: 250, outages: [{ start: 0, end: 2_000 }] },
      { clients: 500 },
    ),
    sequential: preset('closed', 40, 120_000, { ...FAST, sporadic: 'alternate' }, SEQUENTIAL),
    'sequential-random': preset(
      'closed',
      200,
      120_000,
      { ...FAST, sporadic: 'random', sporadicRate: 0.03 },
      SEQUENTIAL,
    ),
    'quota-4s': preset('closed', 100_000, 4_000, QUOTA_4S, { concurrency: 30 }),
    fleet: preset('burst', 2_000, 10_000, { capacity: 200 }, { clients: 8, sharedStore: true }),
    'latency-tail': preset('steady', 2_000, 20_000, TAIL, HEDGING),
    'slow-under-load': preset('steady', 2_880, 20_000, SHARED, { ...HEDGING, deadline: 5_000 }),
  },
};

/** Whether the upstream of `server` ever sends pacing headers (then the `+ra` loops differ from the pure ones). */
export function sendsPacing(server: ServerOptions): boolean {
  return (
    server.retryAfter !== 'none' || server.quota === 'fixed-window' || server.sporadic !== 'none'
  );
}
