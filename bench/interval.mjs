/**
 * Statistics of bench/rounds.mjs: the median, and a 95 % interval for a
 * variant's ratio to its baseline (pure functions, tested in
 * test/unit/bench-interval.test.ts). Needs the build (`npm run build`), as
 * every benchmark does.
 */
import { seededRandom } from '../dist/lab/random.js';

export const median = (values) => {
  const s = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};

export const mean = (values) => values.reduce((a, b) => a + b, 0) / values.length;

/**
 * A 95 % interval for a variant's ratio (the median over rounds of the
 * round's mean requests/s against its baseline's), by a two-level bootstrap:
 * each draw picks the variant's processes and the baseline's with
 * replacement (a process's lottery lasts its whole life, so processes are the
 * units that vary most), then the rounds. With one process a variant, only
 * the rounds are drawn, and the interval leaves that lottery out.
 */
export function ratioInterval(measured, variant, baseline, processes, draws = 2000) {
  // The lab's seeded generator (dist/lab/random.js): the interval prints the same for the same data.
  const random = seededRandom(0x5ca1ab1e, 'bench:interval');
  const pick = (n) => Math.floor(random() * n);
  const rpsOf = (round, v, k) =>
    processes > 1 ? round.cells[v].processes[k].rps : round.cells[v].rps;
  const stats = [];
  for (let d = 0; d < draws; d++) {
    const own = Array.from({ length: processes }, () => pick(processes));
    const base =
      variant === baseline ? own : Array.from({ length: processes }, () => pick(processes));
    const ratios = [];
    for (let i = 0; i < measured.length; i++) {
      const round = measured[pick(measured.length)];
      const a = mean(own.map((k) => rpsOf(round, variant, k)));
      const b = mean(base.map((k) => rpsOf(round, baseline, k)));
      ratios.push(a / b);
    }
    stats.push(median(ratios));
  }
  stats.sort((x, y) => x - y);
  return [stats[Math.floor(draws * 0.025)], stats[Math.ceil(draws * 0.975) - 1]];
}

/**
 * What a ratio with its interval says of a goal (`ratio >= goal`): `met` or
 * `NOT met` when the whole interval is on one side of it; otherwise the
 * median's side, and that the interval holds both.
 */
export function verdict(ratio, interval, goal) {
  if (interval[0] >= goal) return 'met';
  if (interval[1] < goal) return 'NOT met';
  return `${ratio >= goal ? 'met' : 'short'} by the median; the interval holds both`;
}
