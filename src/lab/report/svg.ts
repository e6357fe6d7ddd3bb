/**
 * A few SVG chart primitives for the report: linear or log axes, polylines,
 * areas, shaded bands (outages). Plain strings, no dependency; every series
 * carries `data-series`. Legends sit above the plot, never over the data,
 * and draw each series as it is drawn (a dashed line dashed, an area filled).
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

/** A shaded stretch of x (an outage window). */
export interface Band {
  readonly from: number;
  readonly to: number;
  /** The legend's name for it. */
  readonly label: string;
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
  /** Height of the plot and its axes, without the legend. */
  readonly height?: number;
  readonly xFormat?: (x: number) => string;
  readonly yFormat?: (y: number) => string;
  readonly bands?: readonly Band[] | undefined;
  /** Draw the legend above the plot. @default true */
  readonly legend?: boolean;
}

const M = { left: 60, right: 16, top: 26, bottom: 36 };
const BAND_FILL = 'fill="#888" fill-opacity="0.16"';
const ROW = 16;

function niceStep(max: number, ticks: number): number {
  const raw = max / ticks;
  const mag = 10 ** Math.floor(Math.log10(raw));
  for (const f of [1, 2, 2.5, 5, 10]) if (raw <= f * mag) return f * mag;
  return 10 * mag;
}

const fmt = (n: number): string =>
  Math.abs(n) >= 1000 ? `${+(n / 1000).toFixed(1)}k` : `${+n.toFixed(2)}`;

/** The swatch of a legend entry, drawn as the series is. */
function swatch(s: Series | 'band', x: number, y: number): string {
  if (s === 'band') return `<rect x="${x}" y="${y - 6}" width="18" height="12" ${BAND_FILL}/>`;
  if (s.area) {
    return `<rect x="${x}" y="${y - 5}" width="18" height="10" fill="${s.color}" fill-opacity="0.35" stroke="${s.color}" stroke-width="1"/>`;
  }
  const dash = s.dashed ? ' stroke-dasharray="5 3"' : '';
  return `<line x1="${x}" x2="${x + 18}" y1="${y}" y2="${y}" stroke="${s.color}" stroke-width="2"${dash}/>`;
}

/**
 * Lays out legend entries in rows from (`x`, `y`) within `width`. Returns the
 * SVG and the rows used. Text width is estimated (no layout engine in a string).
 */
export function legend(
  entries: readonly (Series | Band)[],
  x: number,
  y: number,
  width: number,
): { svg: string; rows: number } {
  const parts: string[] = [];
  let cx = x;
  let row = 0;
  for (const e of entries) {
    const name = 'label' in e ? e.label : e.name;
    const w = 26 + name.length * 6.3 + 14;
    if (cx > x && cx + w > x + width) {
      row++;
      cx = x;
    }
    const cy = y + row * ROW;
    parts.push(
      `<g class="lg-item">${swatch('label' in e ? 'band' : e, cx, cy)}<text x="${cx + 24}" y="${cy}" class="lg">${esc(name)}</text></g>`,
    );
    cx += w;
  }
  return { svg: parts.join(''), rows: entries.length === 0 ? 0 : row + 1 };
}

/** A legend on its own (shared by small multiples), as an inline `<svg>`. */
export function legendStrip(entries: readonly (Series | Band)[], width = 720): string {
  const { svg, rows } = legend(entries, M.left, 12, width - M.left - M.right);
  const h = rows * ROW + 6;
  return `<svg xmlns="http://www.w3.org/2000/svg" class="legend" viewBox="0 0 ${width} ${h}" width="${width}" height="${h}" role="img" aria-label="legend">${svg}</svg>`;
}

/** Renders a chart as an inline `<svg>`. */
export function chart(spec: ChartSpec, series: readonly Series[]): string {
  const w = spec.width ?? 720;
  const bands = spec.bands ?? [];
  const entries: (Series | Band)[] = [...series];
  if (bands.length > 0) entries.push(bands[0]!);
  const key =
    spec.legend === false
      ? { svg: '', rows: 0 }
      : legend(entries, M.left, M.top + 2, w - M.left - M.right);
  const top = M.top + key.rows * ROW + (key.rows > 0 ? 4 : 0);
  const h = (spec.height ?? 260) + top - M.top;
  const pw = w - M.left - M.right;
  const ph = h - top - M.bottom;
  const xMax = spec.xMax > 0 ? spec.xMax : 1;
  const yMax = spec.yMax > 0 ? spec.yMax : 1;
  const log = spec.xLog;
  const sx = log
    ? (x: number) =>
        M.left +
        (pw * (Math.log10(Math.max(x, log.min)) - Math.log10(log.min))) /
          (Math.log10(Math.max(xMax, log.min * 10)) - Math.log10(log.min))
    : (x: number) => M.left + (pw * Math.min(x, xMax)) / xMax;
  const sy = (y: number) => top + ph - (ph * Math.min(y, yMax)) / yMax;
  const xf = spec.xFormat ?? fmt;
  const yf = spec.yFormat ?? fmt;
  const parts: string[] = [];
  parts.push(
    `<svg xmlns="http://www.w3.org/2000/svg" class="chart" data-chart="${esc(spec.id)}" viewBox="0 0 ${w} ${h}" width="${w}" height="${h}" role="img" aria-label="${esc(spec.title)}">`,
    `<title>${esc(spec.title)}</title>`,
    `<text x="${M.left}" y="16" class="t">${esc(spec.title)}</text>`,
    key.svg,
  );
  for (const b of bands) {
    const x0 = sx(b.from);
    const x1 = sx(b.to);
    parts.push(
      `<rect class="band" x="${x0.toFixed(1)}" y="${top}" width="${Math.max(1, x1 - x0).toFixed(1)}" height="${ph}" ${BAND_FILL}><title>${esc(b.label)}</title></rect>`,
    );
  }
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
      `<line x1="${px}" x2="${px}" y1="${top}" y2="${top + ph}" class="g"/>`,
      `<text x="${px}" y="${top + ph + 14}" class="xt">${esc(xf(x))}</text>`,
    );
  }
  parts.push(
    `<line x1="${M.left}" x2="${w - M.right}" y1="${top + ph}" y2="${top + ph}" class="axis"/>`,
    `<text x="${M.left + pw / 2}" y="${h - 4}" class="xl">${esc(spec.xLabel)}</text>`,
    `<text x="14" y="${top + ph / 2}" class="yl" transform="rotate(-90 14 ${top + ph / 2})">${esc(spec.yLabel)}</text>`,
  );
  for (const s of series) parts.push(path(s, sx, sy));
  parts.push('</svg>');
  return parts.join('');
}

function path(s: Series, sx: (x: number) => number, sy: (y: number) => number): string {
  if (s.points.length === 0) return '';
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
    : `fill="none" stroke="${s.color}" stroke-width="1.8"${s.dashed ? ' stroke-dasharray="5 3"' : ''}`;
  return `<path class="series" data-series="${esc(s.name)}" d="${d}" ${style}><title>${esc(s.name)}</title></path>`;
}
