/**
 * The progress line of `staunch fetch -o FILE` on a terminal: a bar when the
 * length is known, bytes, rate, ETA, and the retries so far. Pure formatting
 * here; the command redraws it in place at most every 100 ms.
 */

/** What the line shows. */
export interface ProgressState {
  /** Bytes written so far. */
  bytes: number;
  /** The full length, when the response said it. */
  total: number | undefined;
  /** ms since the download started. */
  elapsed: number;
  /** Retries and resumes so far. */
  retries: number;
  /** What is happening when not reading: "retry in 2 s (503)". */
  note?: string | undefined;
}

const UNITS = ['B', 'kB', 'MB', 'GB', 'TB'];

/** 1536 → "1.5 kB" (SI units, as download tools show them). */
export function formatBytes(n: number): string {
  let value = n;
  let unit = 0;
  while (value >= 1000 && unit < UNITS.length - 1) {
    value /= 1000;
    unit++;
  }
  const digits = value < 10 ? 2 : value < 100 ? 1 : 0;
  return unit === 0 ? `${value} B` : `${value.toFixed(digits)} ${UNITS[unit]}`;
}

/** ms → "4 s", "2 min 5 s", "1 h 3 min". */
export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

/**
 * A delay about to be waited, as `-v` says it: milliseconds under a second
 * (a backoff of 494 ms is not "0 s"), tenths of a second under ten, then
 * as {@link formatDuration}.
 */
export function formatDelay(ms: number): string {
  if (ms < 999.5) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 9_950) return `${(ms / 1000).toFixed(1)} s`;
  return formatDuration(ms);
}

/** The line for `state`, at most `width` columns. */
export function renderProgress(state: ProgressState, width = 80): string {
  const rate = state.elapsed > 0 ? (state.bytes * 1000) / state.elapsed : 0;
  const parts: string[] = [];
  if (state.total !== undefined && state.total > 0) {
    const share = Math.min(1, state.bytes / state.total);
    parts.push(`${String(Math.floor(share * 100)).padStart(3)}%`);
    parts.push(`${formatBytes(state.bytes)} / ${formatBytes(state.total)}`);
  } else {
    parts.push(formatBytes(state.bytes));
  }
  parts.push(`${formatBytes(Math.round(rate))}/s`);
  if (state.total !== undefined && rate > 0 && state.bytes < state.total) {
    parts.push(`ETA ${formatDuration(((state.total - state.bytes) * 1000) / rate)}`);
  }
  if (state.retries > 0)
    parts.push(`${state.retries} ${state.retries === 1 ? 'retry' : 'retries'}`);
  if (state.note !== undefined) parts.push(state.note);
  const text = parts.join('  ');
  if (state.total === undefined || state.total <= 0) return text.slice(0, width);
  const barWidth = Math.max(0, Math.min(30, width - text.length - 3));
  if (barWidth < 5) return text.slice(0, width);
  const filled = Math.round(Math.min(1, state.bytes / state.total) * barWidth);
  return `[${'#'.repeat(filled)}${'.'.repeat(barWidth - filled)}] ${text}`;
}
