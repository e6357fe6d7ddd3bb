/**
 * `--report FILE.html`: one self-contained page (inline CSS and SVG, no
 * network, no external script) an engineer can share, about a screen and a
 * half tall at 1280 px: the verdict first (which strategy wins, by how much,
 * on which metric), the results table, goodput of every strategy and the
 * latency distribution side by side, the upstream's arrivals per strategy
 * as small multiples on shared axes, why requests failed, what each
 * strategy is (staunch's defaults read from the library), and how the run
 * was made (command, version, date). Outage windows are shaded on every
 * time chart.
 */

import { hedgeLines, hedgeVerdict } from '../hedging.js';
import type { LabResult, StrategyResult } from '../result.js';
import { describeScenario } from './format.js';
import { type Band, chart, esc, legendStrip, type Series } from './svg.js';
import { failuresTable, resultsNote, resultsTable, strategiesTable } from './tables.js';

const PALETTE = [
  '#d62728',
  '#ff7f0e',
  '#2ca02c',
  '#9467bd',
  '#1f77b4',
  '#8c564b',
  '#e377c2',
  '#7f7f7f',
  '#bcbd22',
  '#17becf',
];

/** The color of the `i`-th strategy. */
export function colorOf(i: number): string {
  return PALETTE[i % PALETTE.length]!;
}

/** How the report was made, shown under the verdict. */
export interface ReportMeta {
  /** The command line that ran the lab (`staunch lab …`). */
  readonly command?: string | undefined;
  /** staunch's version. */
  readonly version?: string | undefined;
  /** When the run was made. @default now */
  readonly date?: Date | undefined;
}

const seconds = (x: number): string => `${+(x / 1000).toFixed(1)} s`;
const pct = (x: number): string => `${(x * 100).toFixed(1)} %`;

function perSecond(values: readonly number[], bin: number): [number, number][] {
  return values.map((v, i) => [i * bin, (v * 1000) / bin]);
}

/** Shared frame of every time chart: the same x span, the same y scale, the outages. */
interface Frame {
  readonly end: number;
  readonly yMax: number;
  readonly capacity: number;
  readonly bands: readonly Band[];
}

function frameOf(result: LabResult): Frame {
  const capacity = result.config.server.capacity;
  let end = 1000;
  let peak = capacity;
  for (const s of result.strategies) {
    const { bin } = s.series;
    end = Math.max(end, s.series.arrivals.length * bin);
    for (const values of [s.series.arrivals, s.series.issued, s.series.ok]) {
      for (const v of values) peak = Math.max(peak, (v * 1000) / bin);
    }
  }
  const bands = result.config.server.outages.map((o) => ({
    from: o.start,
    to: o.end,
    label: 'outage (503)',
  }));
  // 5 % headroom so that the highest point (the demand's peak too) is never cut by the frame.
  return { end, yMax: peak * 1.05, capacity, bands };
}

const capacityLine = (f: Frame): Series => ({
  name: `capacity (${f.capacity}/s)`,
  color: '#000',
  points: [
    [0, f.capacity],
    [f.end, f.capacity],
  ],
  dashed: true,
});

/** One line per strategy over time, capacity dashed, outages shaded. */
function everyStrategy(
  result: LabResult,
  f: Frame,
  pick: (s: StrategyResult) => readonly number[],
  spec: { id: string; title: string; yLabel: string; yMax?: number },
): string {
  const lines: Series[] = result.strategies.map((s, i) => ({
    name: s.name,
    color: colorOf(i),
    points: perSecond(pick(s), s.series.bin),
  }));
  lines.push(capacityLine(f));
  return chart(
    {
      ...spec,
      xLabel: 'time',
      xMax: f.end,
      yMax: spec.yMax ?? f.yMax,
      xFormat: seconds,
      bands: f.bands,
      width: 600,
      height: 230,
    },
    lines,
  );
}

function goodputChart(result: LabResult, f: Frame): string {
  let peak = f.capacity * 1.2;
  for (const s of result.strategies) {
    for (const v of s.series.ok) peak = Math.max(peak, ((v * 1000) / s.series.bin) * 1.05);
  }
  return everyStrategy(result, f, (s) => s.series.ok, {
    id: 'goodput',
    title: 'Goodput: requests served (2xx) per second',
    yLabel: 'served/s',
    yMax: peak,
  });
}

function multipleSeries(s: StrategyResult, i: number, f: Frame): Series[] {
  const { bin } = s.series;
  return [
    {
      name: 'attempts reaching the upstream',
      color: colorOf(i),
      points: perSecond(s.series.arrivals, bin),
      area: true,
    },
    // Near-black, solid: a strategy's own color (green for the third) would hide it in its area.
    { name: 'served (2xx)', color: '#222', points: perSecond(s.series.ok, bin) },
    {
      name: 'demand (new requests)',
      color: '#555',
      points: perSecond(s.series.issued, bin),
      dashed: true,
    },
    capacityLine(f),
  ];
}

/** One chart per strategy, on the same axes, with one legend above them all. */
function smallMultiples(result: LabResult, f: Frame): string {
  const charts = result.strategies.map((s, i) =>
    chart(
      {
        id: `arrivals-${s.name}`,
        title: s.name,
        xLabel: 'time',
        yLabel: 'requests/s',
        xMax: f.end,
        yMax: f.yMax,
        xFormat: seconds,
        bands: f.bands,
        height: 170,
        width: 400,
        legend: false,
      },
      multipleSeries(s, i, f),
    ),
  );
  const first = result.strategies[0];
  const key =
    first === undefined
      ? ''
      : legendStrip(
          [
            ...multipleSeries(first, 0, f).map((s, i) =>
              i === 0 ? { ...s, name: 'attempts reaching the upstream (strategy color)' } : s,
            ),
            ...f.bands.slice(0, 1),
          ],
          1200,
        );
  return `${key}<div class="grid3">${charts.join('\n')}</div>`;
}

function latencyChart(result: LabResult): string {
  const deadline = result.config.deadline;
  const lines: Series[] = result.strategies.map((s, i) => ({
    name: s.name,
    color: colorOf(i),
    points: s.latency,
    step: true,
  }));
  const min = Math.max(1, 10 ** Math.floor(Math.log10(Math.max(1, result.config.rtt))));
  lines.push({
    name: 'optimum success',
    color: '#000',
    points: [
      [min, result.optimum.success],
      [deadline, result.optimum.success],
    ],
    dashed: true,
  });
  return chart(
    {
      id: 'latency',
      title: 'Latency of successes: share of all requests done within x',
      xLabel: 'latency (log scale)',
      yLabel: 'share of requests',
      xMax: deadline,
      yMax: 1,
      xLog: { min },
      xFormat: (x) => (x >= 1000 ? `${x / 1000} s` : `${x} ms`),
      yFormat: (y) => `${Math.round(y * 100)}%`,
      width: 600,
      height: 230,
    },
    lines,
  );
}

/** Equal success within half a tenth of a point: then the load decides. */
const SAME_SUCCESS = 0.0005;

function rank(a: StrategyResult, b: StrategyResult): number {
  if (Math.abs(a.success - b.success) >= SAME_SUCCESS) return b.success - a.success;
  if (a.attemptsPerRequest !== b.attemptsPerRequest)
    return a.attemptsPerRequest - b.attemptsPerRequest;
  return b.goodput - a.goodput;
}

/** The conclusion, in one paragraph of HTML: which strategy, on which metric, by how much. */
export function verdict(result: LabResult): string {
  const ranked = [...result.strategies].sort(rank);
  const best = ranked[0];
  if (best === undefined) return 'No strategy was run.';
  const deadline = seconds(result.config.deadline);
  const apr = (s: StrategyResult): string => s.attemptsPerRequest.toFixed(2);
  const name = (s: StrategyResult): string => `<strong>${esc(s.name)}</strong>`;
  const optimum = ` The optimum for this capacity is ${pct(result.optimum.success)}.`;
  const next = ranked[1];
  if (next === undefined) {
    return `${name(best)}: ${pct(best.success)} of requests succeeded within the ${deadline} deadline, with ${apr(best)} attempts per request.${optimum}`;
  }
  const gap = best.success - next.success;
  if (gap >= SAME_SUCCESS) {
    return `${name(best)} wins on success within the ${deadline} deadline: ${pct(best.success)} of requests against ${pct(next.success)} for ${name(next)}, the next best (+${(gap * 100).toFixed(1)} points), with ${apr(best)} attempts per request against ${apr(next)}.${optimum}`;
  }
  const ratio = next.attemptsPerRequest / Math.max(best.attemptsPerRequest, 1e-9);
  const load =
    ratio > 1.005
      ? `${name(best)} wins on load: ${apr(best)} attempts per request against ${apr(next)} (${ratio.toFixed(2)}× fewer)`
      : `${name(best)} is ahead on goodput: ${best.goodput.toFixed(1)}/s against ${next.goodput.toFixed(1)}/s`;
  return `${name(best)} and ${name(next)} tie on success within the ${deadline} deadline (${pct(best.success)}); ${load}.${optimum}`;
}

const CSS = `body{font:14px/1.4 system-ui,sans-serif;margin:16px auto;max-width:1230px;color:#222;padding:0 16px}
h1{font-size:21px;margin:0 0 4px}h2{font-size:16px;margin:16px 0 4px}p{margin:6px 0}
.verdict{font-size:15px;background:#f3f7f3;border-left:4px solid #2b7a2b;padding:8px 12px;margin:8px 0}
.meta{color:#555;font-size:12.5px}.meta code{background:#f3f3f3;padding:1px 4px}
.grid2{display:grid;grid-template-columns:repeat(2,minmax(0,1fr));gap:10px;align-items:start}.grid3{display:grid;grid-template-columns:repeat(3,minmax(0,1fr));gap:8px}
ul{margin:2px 0;padding-left:18px}
svg.chart,svg.legend{max-width:100%;height:auto;background:#fff}svg.chart{border:1px solid #ddd}
.g{stroke:#eee}.axis{stroke:#999}.t{font-size:13px;font-weight:600}.xt,.xl{font-size:11px;text-anchor:middle}
.yt{font-size:11px;text-anchor:end;dominant-baseline:middle}.yl{font-size:11px;text-anchor:middle}
.lg{font-size:11px;dominant-baseline:middle}
table{border-collapse:collapse;margin:6px 0}td,th{padding:2px 10px;text-align:right;vertical-align:top}td:first-child,th:first-child{text-align:left}
th{border-bottom:1px solid #ccc}table.text td,table.text th{text-align:left}tr:nth-child(even){background:#f7f7f7}tr.opt{color:#555;font-style:italic}
.dot{display:inline-block;width:10px;height:10px;border-radius:5px;margin-right:6px}`;

// Marks every drawn series (a non-empty bounding box) so a headless browser can check the charts rendered.
const CHECK = `for(const s of document.querySelectorAll('svg[data-chart]')){let n=0;for(const p of s.querySelectorAll('[data-series]')){const b=p.getBBox();const ok=b.width>0||b.height>0;p.setAttribute('data-drawn',String(ok));if(ok)n++}s.setAttribute('data-drawn-series',String(n))}document.documentElement.setAttribute('data-rendered','true')`;

/** The report page for `result`, as one HTML string. */
export function renderReport(result: LabResult, meta: ReportMeta = {}): string {
  const c = result.config;
  const title = `staunch lab: ${c.scenario} (${c.mode}, seed ${c.seed})`;
  const f = frameOf(result);
  const made = [
    meta.command === undefined ? '' : `<code>${esc(meta.command)}</code>`,
    meta.version === undefined ? '' : `staunch ${esc(meta.version)}`,
    (meta.date ?? new Date()).toISOString().replace(/\.\d+Z$/, 'Z'),
  ].filter((x) => x !== '');
  const outages =
    c.server.outages.length === 0
      ? ''
      : ' Shaded: the outage window, when the upstream answers 503.';
  const window = `${seconds(result.window[0])}–${seconds(result.window[1])}`;
  const hedging = hedgeVerdict(result);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<title>${esc(title)}</title><style>${CSS}</style></head>
<body>
<h1>${esc(title)}</h1>
<p class="verdict" id="verdict">${verdict(result)}</p>
${hedging === null ? '' : `<p class="verdict" id="hedging">${hedgeLines(hedging).map(esc).join('<br>')}</p>`}
<p class="meta">Made with ${made.join(' · ')}</p>
<p>${esc(describeScenario(c))}.</p>
${resultsTable(result, colorOf)}
<p class="meta">${resultsNote(result, window)}</p>
<div class="grid2">${goodputChart(result, f)}${latencyChart(result)}</div>
<h2>Requests reaching the upstream, per strategy</h2>
<p class="meta">Every chart on the same axes.${outages}</p>
${smallMultiples(result, f)}
<div class="grid2"><div><h2>Why requests failed</h2>
${failuresTable(result)}</div>
<div><h2>Strategies</h2>
${strategiesTable(result)}</div></div>
<p class="meta">Made by <code>staunch lab</code>; see docs/lab.md.</p>
<script>${CHECK}</script>
</body></html>
`;
}
