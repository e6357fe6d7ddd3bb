/**
 * The time left before a deadline, as a header value: plain milliseconds, or
 * gRPC's `grpc-timeout` syntax (an integer of at most 8 digits and a unit:
 * H hours, M minutes, S seconds, m milliseconds, u microseconds, n
 * nanoseconds). Written by the adapters (`deadlineHeader`), read by
 * `staunch/deadline`. No imports: both sides are portable.
 */

/** The two syntaxes of a time-left header. */
export type TimeLeftFormat = 'ms' | 'grpc-timeout';

const MAX_DIGITS = 99_999_999;

/** gRPC's units, finest first, in ms. */
const UNITS: readonly (readonly [unit: string, ms: number])[] = [
  ['n', 1e-6],
  ['u', 1e-3],
  ['m', 1],
  ['S', 1_000],
  ['M', 60_000],
  ['H', 3_600_000],
];

/**
 * `ms` (rounded down to a whole millisecond, never below 0) in `format`:
 * `grpc-timeout` takes the finest of m, S, M, H that keeps the value within
 * 8 digits, rounded down, so the value never promises more time than is left.
 */
export function formatTimeLeft(ms: number, format: TimeLeftFormat): string {
  const whole = ms > 0 ? Math.floor(ms) : 0;
  if (format === 'ms') return String(whole);
  for (const [unit, size] of UNITS) {
    if (size < 1) continue;
    const value = Math.floor(whole / size);
    if (value <= MAX_DIGITS) return `${value}${unit}`;
  }
  return `${MAX_DIGITS}H`;
}

const GRPC = /^(\d{1,8})([HMSmun])$/;
const MS = /^\d{1,15}$/;

/**
 * A header value read back as ms: `undefined` when it is malformed (or
 * absent). `auto` takes either syntax: a unit letter says `grpc-timeout`.
 */
export function parseTimeLeft(
  value: string | undefined,
  format: TimeLeftFormat | 'auto',
): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (format !== 'grpc-timeout' && MS.test(text)) return Number(text);
  if (format === 'ms') return undefined;
  const match = GRPC.exec(text);
  if (match === null) return undefined;
  const size = UNITS.find(([unit]) => unit === match[2])![1];
  return Number(match[1]) * size;
}
