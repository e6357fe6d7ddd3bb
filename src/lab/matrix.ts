/**
 * `staunch lab --matrix`: every scenario of the matrix, each strategy's
 * success, attempts per request, goodput, latency and the optimum, and a
 * computed verdict for `staunch` against issue 9's goal:
 *
 * 1. success ≥ the best plain loop's − 1 point;
 * 2. attempts per request ≤ the lowest loop's (compared as printed, to two decimals);
 * 3. ≥ `goal` (0.97; outage 0.95) × the optimum, on success and on goodput both.
 */

import type { LabMode } from './options.js';
import { columns, ms, pct, rate, wrap } from './report/format.js';
import type { LabResult } from './result.js';
import { runLab } from './run.js';
import { type ScenarioName, STORM_SCENARIOS } from './scenarios.js';
import { isLoop } from './strategies.js';

/** One check of the verdict. */
export interface VerdictCheck {
  readonly name: 'success' | 'attempts' | 'optimum';
  readonly pass: boolean;
  /** What was compared, in words. */
  readonly detail: string;
}

/** Whether staunch met the goal in one scenario; `null` without staunch or without a loop to compare. */
export interface Verdict {
  readonly pass: boolean;
  readonly checks: readonly VerdictCheck[];
}

/** One scenario of the matrix, measured. */
export interface MatrixEntry {
  readonly scenario: ScenarioName;
  readonly result: LabResult;
  readonly verdict: Verdict | null;
  /** Wall time of the scenario, ms. */
  readonly wallMs: number;
}

const round2 = (x: number): number => Math.round(x * 100) / 100;

/**
 * A strategy's share of the optimum: of its success and of its goodput, and
 * the lesser of the two (`share`, the matrix's ×opt).
 */
export function ofOptimum(
  s: { readonly success: number; readonly goodput: number },
  opt: { readonly success: number; readonly goodput: number },
): { success: number; goodput: number; share: number } {
  const success = opt.success > 0 ? s.success / opt.success : 1;
  const goodput = opt.goodput > 0 ? s.goodput / opt.goodput : 1;
  return { success, goodput, share: Math.min(success, goodput) };
}

/** The verdict for staunch in `result` (see the module's comment). */
export function verdictOf(result: LabResult): Verdict | null {
  const staunch = result.strategies.find((s) => s.name === 'staunch');
  const loops = result.strategies.filter((s) => isLoop(s.name));
  if (staunch === undefined || loops.length === 0) return null;
  const best = loops.reduce((a, b) => (b.success > a.success ? b : a));
  const fewest = loops.reduce((a, b) => (b.attemptsPerRequest < a.attemptsPerRequest ? b : a));
  const goal = result.config.goal;
  const { success: ofSuccess, goodput: ofGoodput, share } = ofOptimum(staunch, result.optimum);
  const checks: VerdictCheck[] = [
    {
      name: 'success',
      pass: staunch.success >= best.success - 0.01,
      detail: `${pct(staunch.success)} vs best loop ${best.name} ${pct(best.success)} (− 1 pt allowed)`,
    },
    {
      name: 'attempts',
      pass: round2(staunch.attemptsPerRequest) <= round2(fewest.attemptsPerRequest),
      detail: `${staunch.attemptsPerRequest.toFixed(2)} vs lowest loop ${fewest.name} ${fewest.attemptsPerRequest.toFixed(2)}`,
    },
    {
      name: 'optimum',
      pass: share >= goal,
      detail: `${share.toFixed(3)} of the optimum (success ${ofSuccess.toFixed(3)}, goodput ${ofGoodput.toFixed(3)}) vs ${goal}`,
    },
  ];
  return { pass: checks.every((c) => c.pass), checks };
}

/** What the matrix runs. */
export interface MatrixOptions {
  /** @default 'sim' */
  mode?: LabMode | undefined;
  /** @default 1 */
  seed?: number | undefined;
  /** @default every storm scenario (`STORM_SCENARIOS`: the hedging ones have their own verdict) */
  scenarios?: readonly ScenarioName[] | undefined;
}

/** Runs every scenario of the matrix with its defaults for the mode, one after the other. */
export async function runMatrix(
  options: MatrixOptions = {},
  hooks: { workers?: number; progress?: (line: string) => void } = {},
): Promise<MatrixEntry[]> {
  const out: MatrixEntry[] = [];
  const scenarios = options.scenarios ?? STORM_SCENARIOS;
  for (const [i, scenario] of scenarios.entries()) {
    const began = performance.now();
    const tag = `matrix ${i + 1}/${scenarios.length}`;
    const result = await runLab(
      { scenario, mode: options.mode ?? 'sim', seed: options.seed ?? 1 },
      { workers: hooks.workers, progress: (line) => hooks.progress?.(`${tag} · ${line}`) },
    );
    out.push({ scenario, result, verdict: verdictOf(result), wallMs: performance.now() - began });
  }
  return out;
}

const HEAD = ['strategy', 'success', 'att/req', 'goodput', '×opt', 'p50', 'p99', 'p99 all'];

function rowsOf(result: LabResult): string[][] {
  const opt = result.optimum;
  const rows = result.strategies.map((s) => [
    s.name,
    pct(s.success),
    s.attemptsPerRequest.toFixed(2),
    rate(s.goodput),
    opt.goodput > 0 ? (s.goodput / opt.goodput).toFixed(2) : '–',
    ms(s.p50),
    ms(s.p99),
    ms(s.p99All),
  ]);
  rows.push(['optimum', pct(opt.success), '', rate(opt.goodput), '1.00', '', '', '']);
  return rows;
}

function verdictLine(v: Verdict | null): string {
  if (v === null) return 'verdict: – (no staunch or no loop in this run)';
  const failed = v.checks.filter((c) => !c.pass).map((c) => c.name);
  return `verdict: ${v.pass ? 'PASS' : `FAIL (${failed.join(', ')})`} · ${v.checks.map((c) => `${c.name}: ${c.detail}`).join(' · ')}`;
}

/** The summary: one line per scenario. */
function summaryRows(entries: readonly MatrixEntry[]): string[][] {
  const head = ['scenario', 'staunch', 'best loop', 'att/req', 'fewest', '×opt', 'goal', 'verdict'];
  const rows = entries.map(({ scenario, result, verdict }) => {
    const s = result.strategies.find((x) => x.name === 'staunch');
    const loops = result.strategies.filter((x) => isLoop(x.name));
    const best = Math.max(...loops.map((l) => l.success));
    const fewest = Math.min(...loops.map((l) => l.attemptsPerRequest));
    const share = s === undefined ? '–' : ofOptimum(s, result.optimum).share.toFixed(2);
    const failed = verdict?.checks.filter((c) => !c.pass).map((c) => c.name) ?? [];
    return [
      scenario,
      s === undefined ? '–' : pct(s.success),
      loops.length === 0 ? '–' : pct(best),
      s === undefined ? '–' : s.attemptsPerRequest.toFixed(2),
      loops.length === 0 ? '–' : fewest.toFixed(2),
      share,
      String(result.config.goal),
      verdict === null ? '–' : verdict.pass ? 'pass' : `FAIL: ${failed.join(', ')}`,
    ];
  });
  return [head, ...rows];
}

/** The matrix for a terminal, at most 100 columns. */
export function renderMatrix(entries: readonly MatrixEntry[]): string {
  const out: string[] = [];
  for (const { scenario, result, verdict, wallMs } of entries) {
    const c = result.config;
    out.push(`── ${scenario} · ${c.mode} · seed ${c.seed} · ${(wallMs / 1000).toFixed(1)} s`);
    const laid = columns([HEAD, ...rowsOf(result)]);
    out.push(...laid, ...wrap(verdictLine(verdict)), '');
  }
  const passed = entries.filter((e) => e.verdict?.pass === true).length;
  out.push(`── summary: staunch meets the goal in ${passed} of ${entries.length} scenarios`);
  out.push(...columns(summaryRows(entries)));
  return out.join('\n');
}

const md = (row: readonly string[]): string => `| ${row.join(' | ')} |`;
const mdTable = (rows: readonly (readonly string[])[]): string[] => [
  md(rows[0]!),
  md(rows[0]!.map(() => '---')),
  ...rows.slice(1).map(md),
];

/** The matrix as Markdown (docs/lab.md): the summary first, then one table per scenario. */
export function matrixMarkdown(entries: readonly MatrixEntry[]): string {
  const out = mdTable(summaryRows(entries));
  for (const { scenario, result, verdict } of entries) {
    const mode = result.config.mode;
    const flag = mode === 'sim' ? '' : ` --mode ${mode}`;
    out.push('', `#### ${scenario}`, '', `\`npx staunch lab --scenario ${scenario}${flag}\``, '');
    out.push(...mdTable([HEAD, ...rowsOf(result)]), '', verdictLine(verdict));
  }
  return out.join('\n');
}

/** The matrix as one JSON value: per scenario its verdict and the `--json` of its run. */
export function matrixJson(
  entries: readonly MatrixEntry[],
  toJson: (result: LabResult) => unknown,
): unknown {
  return {
    scenarios: entries.map(({ scenario, result, verdict, wallMs }) => ({
      scenario,
      verdict,
      wallMs: Math.round(wallMs),
      result: toJson(result),
    })),
    passed: entries.filter((e) => e.verdict?.pass === true).length,
    total: entries.length,
  };
}
