/**
 * The lab's outputs in text: the terminal table and the `--json` object.
 */
import type { LabResult } from './evaluate.js';
import type { LabConfig } from './options.js';

/** The `--json` shape: the issue's fields first, then extras. */
export interface LabJson {
  scenario: string;
  mode: string;
  seed: number;
  capacity: number;
  optimum: { success: number; successes: number; goodput: number };
  strategies: {
    name: string;
    success: number;
    p50: number | null;
    p99: number | null;
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
  }[];
  requests: number;
  deadline: number;
  attempts: number;
  /** ms window of the goodput. */
  window: [number, number];
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
    },
    strategies: result.strategies.map((s) => ({
      name: s.name,
      success: round(s.success, 6),
      p50: s.p50 === null ? null : round(s.p50, 1),
      p99: s.p99 === null ? null : round(s.p99, 1),
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
    })),
    requests: c.requests,
    deadline: c.deadline,
    attempts: c.attempts,
    window: [Math.round(result.window[0]), Math.round(result.window[1])],
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

const pct = (x: number): string => `${(x * 100).toFixed(1)} %`;
const ms = (x: number | null): string =>
  x === null ? '–' : x >= 10_000 ? `${(x / 1000).toFixed(1)} s` : `${Math.round(x)} ms`;

/** One line describing the scenario of `config`. */
export function describeScenario(config: LabConfig): string {
  const s = config.server;
  const parts = [
    `${config.requests.toLocaleString('en-US')} requests`,
    config.arrivals === 'burst'
      ? `a burst over ${config.span / 1000} s peaking at ${config.peak}× capacity`
      : config.arrivals === 'steady'
        ? `steady over ${config.span / 1000} s`
        : 'all at once',
    `capacity ${s.capacity}/s (burst ${s.burst})`,
    `deadline ${config.deadline / 1000} s`,
    `${config.attempts} attempts`,
    `Retry-After ${s.retryAfter}`,
    `refusal cost ${s.rejectCost}`,
  ];
  if (s.failureRate > 0) parts.push(`${pct(s.failureRate)} random 503`);
  for (const w of s.outages) parts.push(`503 outage ${w.start / 1000}–${w.end / 1000} s`);
  if (config.clients > 1) parts.push(`${config.clients} clients`);
  return parts.join(', ');
}

/** The comparison table for a terminal. */
export function renderTable(result: LabResult): string {
  const c = result.config;
  const opt = result.optimum;
  const outage = c.server.outages.length > 0;
  const head = [
    'strategy',
    'success',
    'of optimum',
    'p50',
    'p99',
    'goodput',
    'attempts/req',
    '429s',
    'herd peak',
  ];
  const fleet = result.fleet;
  if (outage) head.push('recovery');
  if (fleet) head.push('429s/success');
  const rows = result.strategies.map((s) => {
    const row = [
      s.name,
      pct(s.success),
      opt.success === 0 ? '–' : pct(s.success / opt.success),
      ms(s.p50),
      ms(s.p99),
      `${s.goodput.toFixed(0)}/s (${(s.goodput / c.server.capacity).toFixed(2)} C)`,
      s.attemptsPerRequest.toFixed(2),
      s.tooManyRequests.toLocaleString('en-US'),
      s.herdPeak === null ? '–' : `${s.herdPeak.toFixed(1)}×`,
    ];
    if (outage) row.push(ms(s.recovery));
    if (fleet) row.push(s.successes === 0 ? '–' : (s.tooManyRequests / s.successes).toFixed(3));
    return row;
  });
  const optimumRow = [
    'optimum',
    pct(opt.success),
    '100.0 %',
    '',
    '',
    `${opt.goodput.toFixed(0)}/s (${(opt.goodput / c.server.capacity).toFixed(2)} C)`,
    '',
    '',
    '',
  ];
  if (outage) optimumRow.push('');
  if (fleet) optimumRow.push('');
  const all = [head, ...rows, optimumRow];
  const widths = head.map((_, i) => Math.max(...all.map((r) => r[i]!.length)));
  const line = (r: string[]) =>
    r.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ');
  const rule = widths.map((w) => '─'.repeat(w)).join('  ');
  const [from, to] = result.window;
  const fleetLines = fleet
    ? [
        '',
        `fleet: ${fleet.processes} processes, staunch defaults, one upstream; local: each process keeps its own policy state${fleet.phases.length > 1 ? `; shared: every process uses the Redis store at ${fleet.store}` : ''}.`,
        ...fleet.phases.map(
          (p) =>
            `${p.name}: ${p.degradedProcesses} of ${fleet.processes} processes fell back to local state; latest start ${p.lateMs} ms late`,
        ),
      ]
    : [];
  return [
    `staunch lab · ${c.scenario} · ${c.mode} · seed ${c.seed}${fleet ? ` · fleet of ${fleet.processes}` : ''}`,
    describeScenario(c),
    '',
    line(head),
    rule,
    ...rows.map(line),
    rule,
    line(optimumRow),
    '',
    `goodput: successes per second between ${(from / 1000).toFixed(1)} s and ${(to / 1000).toFixed(1)} s (${result.optimum.saturated ? 'demand over capacity' : 'the arrival span'}); herd peak: retries per 10 ms bin, peak over mean.`,
    ...fleetLines,
  ].join('\n');
}
