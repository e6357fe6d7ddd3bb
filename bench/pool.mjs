#!/usr/bin/env node
/**
 * Several sets of bench/undici-overhead.mjs pooled into one figure a
 * variant: the median over all their rounds of the variant's ratio to the
 * baseline, with a 95 % interval that draws every set's processes and rounds
 * (bench/rounds.mjs, `intervalOf`). One set's interval is ±3–9 % on a
 * 2-core machine (docs/benchmarks.md); pooling is how a goal's last per cent
 * is judged.
 *
 *   npm run build && node bench/pool.mjs [--baseline bare] [--goal 0.95] SET...
 *
 * Each SET is a file holding one set's output: its log (the `round N` lines)
 * or its `--json`. Variants are those of the first set that every set has.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { median, readSet, verdict } from './interval.mjs';
import { intervalOf } from './rounds.mjs';

const HELP = 'Usage: npm run build && node bench/pool.mjs [--baseline bare] [--goal 0.95] SET...';

let parsed;
try {
  parsed = parseArgs({
    options: {
      baseline: { type: 'string', default: 'bare' },
      goal: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    allowPositionals: true,
  });
} catch (error) {
  console.error(`pool: ${error.message}\n${HELP}`);
  process.exit(2);
}
const { values, positionals } = parsed;
if (values.help) {
  console.log(HELP);
  process.exit(0);
}
if (positionals.length === 0) {
  console.error(`pool: name at least one set\n${HELP}`);
  process.exit(2);
}
const goal = values.goal === undefined ? undefined : Number(values.goal);
if (goal !== undefined && !(goal > 0)) {
  console.error(`pool: --goal must be a positive number, got ${values.goal}`);
  process.exit(2);
}
const baseline = values.baseline;
const sets = [];
for (const file of positionals) {
  try {
    sets.push(readSet(readFileSync(file, 'utf8')));
  } catch (error) {
    console.error(`pool: ${file}: ${error.message}`);
    process.exit(2);
  }
}
const variants = Object.keys(sets[0].measured[0].cells).filter((v) =>
  sets.every((s) => s.measured.every((r) => r.cells[v] !== undefined)),
);
if (!variants.includes(baseline)) {
  console.error(`pool: the baseline ${baseline} is not in every set (variants: ${variants})`);
  process.exit(2);
}
const rounds = sets.reduce((n, s) => n + s.measured.length, 0);
console.log(`pool: ${sets.length} sets, ${rounds} rounds; ratio to ${baseline}`);
for (const v of variants) {
  if (v === baseline) continue;
  const ratios = sets.flatMap((s) => s.measured.map((r) => r.cells[v].rps / r.cells[baseline].rps));
  const ratio = median(ratios);
  const interval = intervalOf(sets, v, baseline);
  const span = interval.map((x) => x.toFixed(3)).join('–');
  const said = goal === undefined ? '' : `  >= ${goal}: ${verdict(ratio, interval, goal)}`;
  console.log(`  ${v.padEnd(24)} ${ratio.toFixed(3)} (95 % interval ${span})${said}`);
}
