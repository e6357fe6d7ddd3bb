/**
 * The report's tables: the results (recovery only when the scenario has an
 * outage, the only time it can have a value), why requests failed (one
 * column per reason, headed in words), and what each strategy is.
 */
import { staunchDefaults } from '../defaults.js';
import { hedgeVerdict } from '../hedging.js';
import type { LabResult } from '../result.js';
import { esc } from './svg.js';

/** The color of the `i`-th strategy (the charts' too). */
export type ColorOf = (i: number) => string;

const pct = (x: number): string => `${(x * 100).toFixed(1)} %`;
const ms = (x: number | null): string =>
  x === null ? '–' : x >= 10_000 ? `${(x / 1000).toFixed(1)} s` : `${Math.round(x)} ms`;

/** The results: one row per strategy, then the optimum. */
export function resultsTable(result: LabResult, colorOf: ColorOf): string {
  const outage = result.config.server.outages.length > 0;
  const hedging = hedgeVerdict(result) !== null;
  const heads = ['strategy', 'success', 'vs optimum', 'p50', 'p99', 'goodput/s', 'attempts/req'];
  heads.push('429s', ...(outage ? ['recovery'] : []), ...(hedging ? ['work/req'] : []));
  const head = `<tr>${heads.map((h) => `<th>${h}</th>`).join('')}</tr>`;
  const opt = result.optimum.success;
  const rows = result.strategies.map((s, i) => {
    const cells = [
      `<span class="dot" style="background:${colorOf(i)}"></span>${esc(s.name)}`,
      pct(s.success),
      opt === 0 ? '–' : `${((s.success / opt) * 100).toFixed(1)} %`,
      ms(s.p50),
      ms(s.p99),
      s.goodput.toFixed(1),
      s.attemptsPerRequest.toFixed(2),
      String(s.tooManyRequests),
      ...(outage ? [ms(s.recovery)] : []),
      ...(hedging ? [ms(s.workPerRequest)] : []),
    ];
    return `<tr>${cells.map((c) => `<td>${c}</td>`).join('')}</tr>`;
  });
  const optimum = ['optimum', pct(opt), '100 %', '', '', result.optimum.goodput.toFixed(1)];
  optimum.push('1.00', '0', ...(outage ? [''] : []), ...(hedging ? [''] : []));
  rows.push(`<tr class="opt">${optimum.map((c) => `<td>${c}</td>`).join('')}</tr>`);
  return `<table class="num" id="results">${head}${rows.join('')}</table>`;
}

/** What the results table's columns mean, recovery included when it is shown. */
export function resultsNote(result: LabResult, window: string): string {
  const recovery =
    result.config.server.outages.length > 0
      ? ' Recovery: from the end of the last outage until the upstream serves 90 % of what it could again (– if it never did).'
      : '';
  return `Success: logical requests answered 2xx within the deadline. Latency percentiles over successes. Goodput: successes per second over the window ${window}.${recovery} Optimum: the most requests any client could complete within the deadline from this capacity (served in arrival order, never refused).`;
}

/** Each `giveUp` reason (and error code) as a column heading says it. */
const REASONS: Readonly<Record<string, string>> = {
  attempts: 'attempts used up',
  deadline: 'deadline passed',
  'retry-after': 'Retry-After too long',
  'not-replayable': 'not replayable',
  'body-not-replayable': 'body not replayable',
  budget: 'retry budget spent',
  'circuit-open': 'circuit open',
  'rate-limited': 'rate limiter: no time',
  'queue-full': 'queue full',
  'queue-timeout': 'queue timeout',
};

/** Failed requests per strategy, by why they stopped; the reason's own name in `data-reason`. */
export function failuresTable(result: LabResult): string {
  const reasons = [...new Set(result.strategies.flatMap((s) => Object.keys(s.outcomes)))].sort();
  if (reasons.length === 0) return '<p>No request failed.</p>';
  const heads = reasons.map(
    (r) => `<th data-reason="${esc(r)}" title="${esc(r)}">${esc(REASONS[r] ?? r)}</th>`,
  );
  const head = `<tr><th>strategy</th>${heads.join('')}<th>failed</th></tr>`;
  const rows = result.strategies.map((s) => {
    const cells = reasons.map((r) => `<td>${s.outcomes[r] ?? 0}</td>`).join('');
    return `<tr><td>${esc(s.name)}</td>${cells}<td>${s.requests - s.successes}</td></tr>`;
  });
  return `<table class="num" id="failures">${head}${rows.join('')}</table>`;
}

/** staunch's defaults, one per line, each marked with the option it comes from. */
function defaultsList(): string {
  const items = staunchDefaults().map(
    (d) => `<li data-default="${esc(d.option)}">${esc(d.text)}</li>`,
  );
  return `the library's defaults:<ul id="defaults">${items.join('')}</ul>`;
}

/** What each strategy is: its backoff and policies (staunch's read from the library). */
export function strategiesTable(result: LabResult): string {
  const rows = result.strategies.map((s) => {
    const what = s.name === 'staunch' ? defaultsList() : esc(s.description);
    return `<tr data-strategy="${esc(s.name)}"><td>${esc(s.name)}</td><td>${what}</td></tr>`;
  });
  return `<table class="text" id="strategies"><tr><th>strategy</th><th>what it is</th></tr>${rows.join('')}</table>`;
}
