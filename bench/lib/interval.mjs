/**
 * Statistics of bench/lib/rounds.mjs: the median, and a 95 % interval for a
 * variant's ratio to its baseline (pure functions, tested in
 * bench/test/interval.test.ts). The bootstrap's draws come from a
 * `random` the caller seeds (bench/lib/rounds.mjs, `intervalOf`), so that the
 * same data prints the same interval.
 */

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
export function ratioInterval(measured, variant, baseline, processes, random, draws = 2000) {
  return pooledInterval([{ measured, processes }], variant, baseline, random, draws);
}

/**
 * {@link ratioInterval} over several sets pooled (`sets`: each its measured
 * rounds and its processes a variant): each draw makes every set's draw, and
 * takes the median of all their rounds' ratios together.
 */
export function pooledInterval(sets, variant, baseline, random, draws = 2000) {
  const pick = (n) => Math.floor(random() * n);
  // Each set's requests/s by round and process, read once: [variant's, baseline's].
  const tables = sets.map(({ measured, processes }) => {
    const rps = (cell) => (processes > 1 ? cell.processes.map((p) => p.rps) : [cell.rps]);
    return {
      processes,
      rounds: measured.map((r) => [rps(r.cells[variant]), rps(r.cells[baseline])]),
    };
  });
  const stats = [];
  for (let d = 0; d < draws; d++) {
    const ratios = [];
    for (const { processes, rounds } of tables) {
      const own = Array.from({ length: processes }, () => pick(processes));
      const base =
        variant === baseline ? own : Array.from({ length: processes }, () => pick(processes));
      for (let i = 0; i < rounds.length; i++) {
        const [a, b] = rounds[pick(rounds.length)];
        ratios.push(mean(own.map((k) => a[k])) / mean(base.map((k) => b[k])));
      }
    }
    stats.push(median(ratios));
  }
  stats.sort((x, y) => x - y);
  return [stats[Math.floor(draws * 0.025)], stats[Math.ceil(draws * 0.975) - 1]];
}

/**
 * The measured rounds of one set, from `bench/undici-overhead.mjs`'s output:
 * its `--json` (the `rounds` it holds), or its log, whose `round N` lines
 * carry each variant's requests/s and, with several processes, each
 * process's (`name 41234 [40112 42356 …]`).
 */
export function readSet(text) {
  const trimmed = text.trimStart();
  if (trimmed.startsWith('{')) {
    const { rounds, config } = JSON.parse(trimmed);
    const measured = rounds.filter((r) => !r.warmup);
    return { measured, processes: config.processes ?? 1 };
  }
  const measured = [];
  for (const line of text.split('\n')) {
    if (!/^ {2}round \d+/.test(line)) continue;
    const cells = {};
    for (const m of line.matchAll(/([\w@.-]+) (\d+)(?: \[([\d ]+)\])? \(\d/g)) {
      const processes = m[3]?.split(' ').map((x) => ({ rps: Number(x) }));
      cells[m[1]] = { rps: Number(m[2]), ...(processes !== undefined && { processes }) };
    }
    measured.push({ cells });
  }
  if (measured.length === 0) throw new Error('no measured rounds in this output');
  const first = Object.values(measured[0].cells)[0];
  return { measured, processes: first.processes?.length ?? 1 };
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
