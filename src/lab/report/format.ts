/**
 * The lab's outputs in text: the terminal table and the `--json` object.
 */

import { type HedgeVerdict, hedgeLines, hedgeVerdict } from '../hedging.js';
import type { LabConfig } from '../options.js';
import type { LabResult } from '../result.js';

/** The `--json` shape: the issue's fields first, then extras. */
export interface LabJson {
  scenario: string;
  mode: string;
  seed: number;
  capacity: number;
  optimum: {
    success: number;
    successes: number;
    goodput: number;
    /** Logical requests of the ideal run (a closed loop's ideal client sends its own count). */
    requests: number;
    /** When the ideal run's last answer is back, ms. */
    finish: number;
  };
  strategies: {
    name: string;
    success: number;
    p50: number | null;
    p99: number | null;
    /** Over every request, failures counted when they failed. */
    p50All: number | null;
    p99All: number | null;
    goodput: number;
    attemptsPerRequest: number;
    tooManyRequests: number;
    herdPeak: number | null;
    successVsOptimum: number;
    recovery: number | null;
    serverArrivals: number;
    outcomes: Record<string, number>;
    wallMs: number;
    /** 429s the upstream sent per successful logical request (null without a success). */
    tooManyPerSuccess: number | null;
    /** ms of the upstream's service per logical request (null when not measured). */
    workPerRequest: number | null;
  }[];
  requests: number;
  deadline: number;
  attempts: number;
  /** ms window of the goodput. */
  window: [number, number];
  /** What the window is (see `LabResult.goodputBy`). */
  goodputBy: string;
  /** Closed-loop clients (0: open loop). */
  concurrency: number;
  /** Runs with `staunch` and a hedging strategy: each hedging strategy over staunch, and the targets. `null` otherwise. */
  hedging: HedgeVerdict | null;
  /**
   * Fleet runs only: the processes, the store (password redacted), and per
   * phase (`local`, `shared`) how many members fell back to local state and
   * how late the latest was for the start. `null` otherwise.
   */
  fleet: {
    processes: number;
    store: string;
    phases: { name: string; degradedProcesses: number; lateMs: number }[];
  } | null;
}

const round = (n: number, digits: number): number => {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
};

/** The result as the `--json` object (success as a fraction, times in ms, goodput per second). */
export function toJson(result: LabResult): LabJson {
  const c = result.config;
  return {
    scenario: c.scenario,
    mode: c.mode,
    seed: c.seed,
    capacity: c.server.capacity,
    optimum: {
      success: round(result.optimum.success, 6),
      successes: round(result.optimum.successes, 2),
      goodput: round(result.optimum.goodput, 2),
      requests: result.optimum.requests,
      finish: Math.round(result.optimum.finish),
    },
    strategies: result.strategies.map((s) => ({
      name: s.name,
      success: round(s.success, 6),
      p50: s.p50 === null ? null : round(s.p50, 1),
      p99: s.p99 === null ? null : round(s.p99, 1),
      p50All: s.p50All === null ? null : round(s.p50All, 1),
      p99All: s.p99All === null ? null : round(s.p99All, 1),
      goodput: round(s.goodput, 2),
      attemptsPerRequest: round(s.attemptsPerRequest, 4),
      tooManyRequests: s.tooManyRequests,
      herdPeak: s.herdPeak === null ? null : round(s.herdPeak, 2),
      successVsOptimum:
        result.optimum.success === 0 ? 0 : round(s.success / result.optimum.success, 4),
      recovery: s.recovery,
      serverArrivals: s.serverArrivals,
      outcomes: { ...s.outcomes },
      wallMs: Math.round(s.wallMs),
      tooManyPerSuccess: s.successes === 0 ? null : round(s.tooManyRequests / s.successes, 4),
      workPerRequest: s.workPerRequest === null ? null : round(s.workPerRequest, 2),
    })),
    requests: c.requests,
    deadline: c.deadline,
    attempts: c.attempts,
    window: [Math.round(result.window[0]), Math.round(result.window[1])],
    goodputBy: result.goodputBy ?? 'saturated',
    concurrency: c.concurrency,
    hedging: hedgeVerdict(result),
    fleet:
      result.fleet === undefined
        ? null
        : {
            processes: result.fleet.processes,
            store: result.fleet.store,
            phases: result.fleet.phases.map((p) => ({ ...p })),
          },
  };
}

/** A share as a percentage with one decimal. */
export const pct = (x: number): string => `${(x * 100).toFixed(1)} %`;
/** A latency, short: `52 ms`, `5.1 s`, `33.5 s`. */
export const ms = (x: number | null): string =>
  x === null ? '–' : x >= 1_000 ? `${(x / 1000).toFixed(1)} s` : `${Math.round(x)} ms`;
/** A count, short: `540,924` → `541k`. */
export const count = (x: number): string =>
  x >= 1e6 ? `${(x / 1e6).toFixed(1)}M` : x >= 1e4 ? `${Math.round(x / 1e3)}k` : String(x);
/** A rate per second with three significant digits at most. */
export const rate = (x: number): string =>
  `${x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2)}/s`;

/** One line describing the scenario of `config`. */
export function describeScenario(config: LabConfig): string {
  const s = config.server;
  const closed = config.arrivals === 'closed';
  const parts = [
    closed
      ? `${config.concurrency} closed-loop client${config.concurrency === 1 ? '' : 's'} for ${config.span / 1000} s (at most ${config.requests.toLocaleString('en-US')} requests)`
      : `${config.requests.toLocaleString('en-US')} requests`,
  ];
  if (!closed) {
    parts.push(
      config.arrivals === 'burst'
        ? `a burst over ${config.span / 1000} s peaking at ${config.peak}× capacity`
        : config.arrivals === 'steady'
          ? `steady over ${config.span / 1000} s`
          : 'all at once',
    );
  }
  parts.push(
    s.quota === 'fixed-window'
      ? `fixed window ${Math.floor((s.capacity * (s.window ?? 1000)) / 1000)} per ${(s.window ?? 1000) / 1000} s`
      : `capacity ${s.capacity}/s (burst ${s.burst})`,
    `deadline ${config.deadline / 1000} s`,
    `${config.attempts} attempts`,
    `Retry-After ${s.retryAfter}`,
  );
  if (s.quota !== 'fixed-window') parts.push(`refusal cost ${s.rejectCost}`);
  if ((s.tailRate ?? 0) > 0 || (s.cores ?? 0) > 0) parts.push(`service ${s.serviceTime} ms`);
  if ((s.tailRate ?? 0) > 0)
    parts.push(`${pct(s.tailRate!)} of responses ${s.tailFactor ?? 20}× slower`);
  if ((s.cores ?? 0) > 0) parts.push(`${s.cores} cores shared by the requests in service`);
  if (s.failureRate > 0) parts.push(`${pct(s.failureRate)} random 503`);
  if (s.sporadic === 'alternate') parts.push('alternately 404 and 429 Retry-After: 0');
  if (s.sporadic === 'random') parts.push(`${pct(s.sporadicRate ?? 0)} 429 Retry-After: 0`);
  if (s.outages.length > 3) {
    const w = s.outages;
    parts.push(
      `${w.length} outages ${w[0]!.start / 1000}–${w[w.length - 1]!.end / 1000} s (${(w[0]!.end - w[0]!.start) / 1000} s down, ${(w[1]!.start - w[0]!.end) / 1000} s up)`,
    );
  } else for (const w of s.outages) parts.push(`503 outage ${w.start / 1000}–${w.end / 1000} s`);
  if (config.clients > 1)
    parts.push(`${config.clients} clients${config.sharedStore ? ' sharing one store' : ''}`);
  return parts.join(', ');
}

/** Lays rows out in columns (the first left-aligned), wrapped to `width` by whole words where a cell is text. */
export function columns(rows: readonly (readonly string[])[]): string[] {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) =>
    r
      .map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!)))
      .join('  ')
      .trimEnd(),
  );
}

/** Wraps `text` at spaces to lines of at most `width` characters. */
export function wrap(text: string, width = 100): string[] {
  const out: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line !== '' && line.length + 1 + word.length > width) {
      out.push(line);
      line = word;
    } else line = line === '' ? word : `${line} ${word}`;
  }
  if (line !== '') out.push(line);
  return out;
}

/** The goodput cell: rate and share of the optimum's goodput. */
function goodputCells(goodput: number, optimum: number): [string, string] {
  return [rate(goodput), optimum > 0 ? (goodput / optimum).toFixed(2) : '–'];
}

/**
 * The comparison table for a terminal, at most 100 columns: success,
 * attempts per request, goodput (and its share of the optimum's),
 * latency over successes (p50, p99) and over all requests (`all`,
 * failures at the time they failed), 429s, herd peak, recovery.
 */
export function renderTable(result: LabResult): string {
  const c = result.config;
  const opt = result.optimum;
  const outage = c.server.outages.length > 0;
  const fleet = result.fleet;
  const hedging = hedgeVerdict(result);
  const head = ['strategy', 'success', 'att/req', 'goodput', '×opt', 'p50', 'p99', 'p50 all'];
  // A hedging run has no 429s and no retry herd to speak of: the upstream's work instead.
  head.push('p99 all', ...(hedging ? ['work/req'] : ['429s', 'herd']));
  if (outage) head.push('recovery');
  if (fleet) head.push('429/ok');
  const rows = result.strategies.map((s) => {
    const row = [s.name, pct(s.success), s.attemptsPerRequest.toFixed(2)];
    row.push(...goodputCells(s.goodput, opt.goodput), ms(s.p50), ms(s.p99), ms(s.p50All));
    row.push(ms(s.p99All));
    if (hedging) row.push(ms(s.workPerRequest));
    else
      row.push(count(s.tooManyRequests), s.herdPeak === null ? '–' : `${s.herdPeak.toFixed(1)}×`);
    if (outage) row.push(ms(s.recovery));
    if (fleet) row.push(s.successes === 0 ? '–' : (s.tooManyRequests / s.successes).toFixed(2));
    return row;
  });
  const optimumRow = ['optimum', pct(opt.success), '', rate(opt.goodput), '1.00'];
  const laid = columns([head, ...rows, optimumRow]);
  const rule = '─'.repeat(Math.max(...laid.map((l) => l.length)));
  const [from, to] = result.window;
  const by = result.goodputBy ?? 'saturated';
  const where =
    by === 'count'
      ? `answers over the time to the last one (optimum: ${ms(opt.finish)})`
      : `answers per second between ${(from / 1000).toFixed(1)} s and ${(to / 1000).toFixed(1)} s (${by === 'saturated' ? 'demand over capacity' : by === 'span' ? 'the closed loop' : 'the arrival span'})`;
  const fleetLines = fleet
    ? [
        '',
        ...wrap(
          `fleet: ${fleet.processes} processes, staunch defaults, one upstream; local: each process keeps its own policy state${fleet.phases.length > 1 ? `; shared: every process uses the Redis store at ${fleet.store}` : ''}.`,
        ),
        ...fleet.phases.map(
          (p) =>
            `${p.name}: ${p.degradedProcesses} of ${fleet.processes} processes fell back to local state; latest start ${p.lateMs} ms late`,
        ),
      ]
    : [];
  return [
    `staunch lab · ${c.scenario} · ${c.mode} · seed ${c.seed}${fleet ? ` · fleet of ${fleet.processes}` : ''}`,
    ...wrap(describeScenario(c)),
    '',
    laid[0]!,
    rule,
    ...laid.slice(1, -1),
    rule,
    laid[laid.length - 1]!,
    '',
    ...wrap(
      `goodput: ${where}; ×opt: of the optimum's goodput; p50/p99: answers; all: every request, failures when they failed; ${hedging ? "work/req: the upstream's service per request, ms of one core (aborted work up to the abort)" : 'herd: retries per 10 ms bin, peak over mean'}.`,
    ),
    ...fleetLines,
    ...(hedging ? ['', ...hedgeLines(hedging).flatMap((line) => wrap(line))] : []),
  ].join('\n');
}
