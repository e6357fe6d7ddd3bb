/**
 * A few SVG chart primitives for the report: linear or log axes, polylines,
 * areas. Plain strings, no dependency; every series carries `data-series`.
 */

/** Escapes text for HTML and SVG. */
export function esc(text: string): string {
  return text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!,
  );
}

/** One line or area of a chart. */
export interface Series {
  readonly name: string;
  readonly color: string;
  readonly points: readonly (readonly [number, number])[];
  /** Filled down to y = 0 instead of a line. */
  readonly area?: boolean;
  readonly dashed?: boolean;
  /** Drawn as steps (a CDF). */
  readonly step?: boolean;
}

/** A chart's frame. */
export interface ChartSpec {
  /** `data-chart` of the svg. */
  readonly id: string;
  readonly title: string;
  readonly xLabel: string;
  readonly yLabel: string;
  readonly xMax: number;
  readonly yMax: number;
  /** Log scale on x from `xMin`. */
  readonly xLog?: { readonly min: number } | undefined;
  readonly width?: number;
  readonly height?: number;
  readonly xFormat?: (x: number) => string;
  readonly yFormat?: (y: number) => string;
}

const M = { left: 56, right: 12, top: 28, bottom: 36 };

function niceStep(max: number, ticks: number): number {
  const raw = max / ticks;
  const mag = 10 ** Math.floor(Math.log10(raw));
  for (const f of [1, 2, 2.5, 5, 10]) if (raw <= f * mag) return f * mag;
  return 10 * mag;
}

const fmt = (n: number): string =>
  Math.abs(n) >= 1000 ? `${+(n / 1000).toFixed(1)}k` : `${+n.toFixed(2)}`;

/** Renders a chart as an inline `<svg>`. */
export function chart(spec: ChartSpec, series: readonly Series[]): string {
  const w = spec.width ?? 720;
  const h = spec.height ?? 260;
  const pw = w - M.left - M.right;
  const ph = h - M.top - M.bottom;
  const xMax = spec.xMax > 0 ? spec.xMax : 1;
  const yMax = spec.yMax > 0 ? spec.yMax : 1;
  const log = spec.xLog;
  const sx = log
    ? (x: number) =>
        M.left +
        (pw * (Math.log10(Math.max(x, log.min)) - Math.log10(log.min))) /
          (Math.log10(Math.max(xMax, log.min * 10)) - Math.log10(log.min))
    : (x: number) => M.left + (pw * x) / xMax;
  const sy = (y: number) => M.top + ph - (ph * Math.min(y, yMax)) / yMax;
  const xf = spec.xFormat ?? fmt;
  const yf = spec.yFormat ?? fmt;
  const parts: string[] = [];
  parts.push(
    `<svg xmlns="http://www.w3.org/2000/svg" class="chart" data-chart="${esc(spec.id)}" viewBox="0 0 ${w} ${h}" width="${w}" height="${h}" role="img" aria-label="${esc(spec.title)}">`,
    `<title>${esc(spec.title)}</title>`,
    `<text x="${M.left}" y="16" class="t">${esc(spec.title)}</text>`,
  );
  // Grid and ticks.
  const yStep = niceStep(yMax, 4);
  for (let y = 0; y <= yMax + 1e-9; y += yStep) {
    const py = sy(y).toFixed(1);
    parts.push(
      `<line x1="${M.left}" x2="${w - M.right}" y1="${py}" y2="${py}" class="g"/>`,
      `<text x="${M.left - 6}" y="${py}" class="yt">${esc(yf(y))}</text>`,
    );
  }
  const xTicks: number[] = [];
  if (log) {
    for (let x = log.min; x <= xMax * 1.0001; x *= 10) xTicks.push(x);
  } else {
    const xStep = niceStep(xMax, 6);
    for (let x = 0; x <= xMax + 1e-9; x += xStep) xTicks.push(x);
  }
  for (const x of xTicks) {
    const px = sx(x).toFixed(1);
    parts.push(
      `<line x1="${px}" x2="${px}" y1="${M.top}" y2="${M.top + ph}" class="g"/>`,
      `<text x="${px}" y="${M.top + ph + 14}" class="xt">${esc(xf(x))}</text>`,
    );
  }
  parts.push(
    `<text x="${M.left + pw / 2}" y="${h - 4}" class="xl">${esc(spec.xLabel)}</text>`,
    `<text x="12" y="${M.top + ph / 2}" class="yl" transform="rotate(-90 12 ${M.top + ph / 2})">${esc(spec.yLabel)}</text>`,
  );
  for (const s of series) {
    if (s.points.length === 0) continue;
    const pts: string[] = [];
    let prevY: number | undefined;
    for (const [x, y] of s.points) {
      if (s.step && prevY !== undefined) pts.push(`${sx(x).toFixed(1)},${sy(prevY).toFixed(1)}`);
      pts.push(`${sx(x).toFixed(1)},${sy(y).toFixed(1)}`);
      prevY = y;
    }
    const first = s.points[0]!;
    const last = s.points[s.points.length - 1]!;
    const d = s.area
      ? `M${sx(first[0]).toFixed(1)},${sy(0).toFixed(1)}L${pts.join('L')}L${sx(last[0]).toFixed(1)},${sy(0).toFixed(1)}Z`
      : `M${pts.join('L')}`;
    const style = s.area
      ? `fill="${s.color}" fill-opacity="0.35" stroke="none"`
      : `fill="none" stroke="${s.color}" stroke-width="1.6"${s.dashed ? ' stroke-dasharray="5 4"' : ''}`;
    parts.push(
      `<path class="series" data-series="${esc(s.name)}" d="${d}" ${style}><title>${esc(s.name)}</title></path>`,
    );
  }
  // Legend.
  let lx = M.left + 8;
  for (const s of series) {
    parts.push(
      `<rect x="${lx}" y="${M.top + 4}" width="10" height="10" fill="${s.color}"/>`,
      `<text x="${lx + 14}" y="${M.top + 13}" class="lg">${esc(s.name)}</text>`,
    );
    lx += 24 + s.name.length * 6.5;
  }
  parts.push('</svg>');
  return parts.join('');
}
