/**
 * `--report FILE.html`: one self-contained page (inline CSS and SVG, no
 * network, no external script) with the table, the upstream's arrivals over
 * time for every strategy, and the latency distribution of successes.
 */
import type { LabResult, StrategyResult } from './evaluate.js';
import { describeScenario, renderTable } from './format.js';
import { chart, esc, type Series } from './svg.js';

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

const seconds = (x: number): string => `${+(x / 1000).toFixed(1)} s`;

function perSecond(values: readonly number[], bin: number): [number, number][] {
  return values.map((v, i) => [i * bin, (v * 1000) / bin]);
}

function arrivalsChart(result: LabResult, s: StrategyResult, i: number): string {
  const { bin } = s.series;
  const capacity = result.config.server.capacity;
  const arrivals = perSecond(s.series.arrivals, bin);
  const end = s.series.arrivals.length * bin;
  const yMax = Math.max(capacity * 1.2, ...arrivals.map(([, y]) => y));
  const series: Series[] = [
    { name: `${s.name}: arrivals`, color: colorOf(i), points: arrivals, area: true },
    { name: 'served (2xx)', color: '#2b7a2b', points: perSecond(s.series.ok, bin) },
    { name: 'demand', color: '#555', points: perSecond(s.series.issued, bin), dashed: true },
    {
      name: 'capacity',
      color: '#000',
      points: [
        [0, capacity],
        [end, capacity],
      ],
      dashed: true,
    },
  ];
  return chart(
    {
      id: `arrivals-${s.name}`,
      title: `${s.name}: requests reaching the upstream per second`,
      xLabel: 'time',
      yLabel: 'requests/s',
      xMax: end,
      yMax,
      xFormat: seconds,
      height: 220,
    },
    series,
  );
}

function overlayChart(result: LabResult): string {
  const capacity = result.config.server.capacity;
  const first = result.strategies[0];
  if (first === undefined) return '';
  const end = first.series.arrivals.length * first.series.bin;
  const lines: Series[] = result.strategies.map((s, i) => ({
    name: s.name,
    color: colorOf(i),
    points: perSecond(s.series.arrivals, s.series.bin),
  }));
  const yMax = Math.max(capacity * 1.2, ...lines.flatMap((l) => l.points.map(([, y]) => y)));
  lines.push({
    name: 'capacity',
    color: '#000',
    points: [
      [0, capacity],
      [end, capacity],
    ],
    dashed: true,
  });
  return chart(
    {
      id: 'arrivals',
      title: 'Requests reaching the upstream per second, every strategy',
      xLabel: 'time',
      yLabel: 'requests/s',
      xMax: end,
      yMax,
      xFormat: seconds,
    },
    lines,
  );
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
      title: 'Latency of successful requests: share of all requests done within x',
      xLabel: 'latency (log scale)',
      yLabel: 'share of requests',
      xMax: deadline,
      yMax: 1,
      xLog: { min },
      xFormat: (x) => (x >= 1000 ? `${x / 1000} s` : `${x} ms`),
      yFormat: (y) => `${Math.round(y * 100)}%`,
    },
    lines,
  );
}

const CSS = `body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1200px;color:#222;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px}
pre{background:#f6f6f6;padding:12px;overflow-x:auto;font-size:12.5px}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(560px,1fr));gap:12px}
svg.chart{max-width:100%;height:auto;background:#fff;border:1px solid #ddd}
.g{stroke:#eee}.t{font-size:13px;font-weight:600}.xt,.xl{font-size:11px;text-anchor:middle}
.yt{font-size:11px;text-anchor:end;dominant-baseline:middle}.yl{font-size:11px;text-anchor:middle}
.lg{font-size:11px}td,th{padding:2px 10px;text-align:right}td:first-child,th:first-child{text-align:left}
table{border-collapse:collapse}tr:nth-child(even){background:#f7f7f7}`;

// Marks every drawn series (a non-empty bounding box) so a headless browser can check the charts rendered.
const CHECK = `for(const s of document.querySelectorAll('svg[data-chart]')){let n=0;for(const p of s.querySelectorAll('[data-series]')){const b=p.getBBox();const ok=b.width>0||b.height>0;p.setAttribute('data-drawn',String(ok));if(ok)n++}s.setAttribute('data-drawn-series',String(n))}document.documentElement.setAttribute('data-rendered','true')`;

/** The report page for `result`, as one HTML string. */
export function renderReport(result: LabResult): string {
  const c = result.config;
  const title = `staunch lab: ${c.scenario} (${c.mode}, seed ${c.seed})`;
  const rows = result.strategies
    .map(
      (s) =>
        `<tr><td>${esc(s.name)}</td><td>${esc(s.description)}</td><td>${s.attemptsPerRequest.toFixed(2)}</td><td>${esc(JSON.stringify(s.outcomes))}</td></tr>`,
    )
    .join('');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<title>${esc(title)}</title><style>${CSS}</style></head>
<body>
<h1>${esc(title)}</h1>
<p>${esc(describeScenario(c))}.</p>
<pre>${esc(renderTable(result))}</pre>
<h2>Requests reaching the upstream</h2>
${overlayChart(result)}
<div class="grid">${result.strategies.map((s, i) => arrivalsChart(result, s, i)).join('\n')}</div>
<h2>Latency distribution</h2>
${latencyChart(result)}
<h2>Strategies</h2>
<table><tr><th>strategy</th><th>configuration</th><th>attempts/req</th><th>failures by reason</th></tr>${rows}</table>
<p>Optimum: the most requests any client could complete within the deadline from this capacity
(served in arrival order, never refused). Made by <code>staunch lab</code>; see docs/lab.md.</p>
<script>${CHECK}</script>
</body></html>
`;
}
