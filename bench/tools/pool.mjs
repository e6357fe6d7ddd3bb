#!/usr/bin/env node
/**
 * Several sets of bench/undici-overhead.mjs pooled into one figure a
 * variant: the median over all their rounds of the variant's ratio to the
 * baseline, with a 95 % interval that draws every set's processes and rounds
 * (bench/lib/rounds.mjs, `intervalOf`). One set's interval is ±3–9 % on a
 * 2-core machine (docs/benchmarks.md); pooling is how a goal's last per cent
 * is judged.
 *
 *   npm run build && node bench/tools/pool.mjs [--baseline bare] [--goal 0.95] [--same A=B] SET...
 *
 * `--same A=B` (repeatable) reads variant A of any set as B: one build
 * measured as `createAgent@lean` in an A/B set and as `createAgent` in
 * another pools as one variant.
 *
 * Each SET is a file holding one set's output: its log (the `round N` lines)
 * or its `--json`. Variants are those of the first set that every set has.
 *
 * Sets run with `--skip` also get, for each variant with a `.late` twin, how
 * much more its requests/s rose from the whole slot to its late part than the
 * baseline's did (each process's late/whole, a variant's mean in a round,
 * over the baseline's): above 1, the variant pays more than the baseline in
 * a slot's first part.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { mean, median, readSet, verdict } from '../lib/interval.mjs';
import { intervalOf, late } from '../lib/rounds.mjs';

const HELP =
  'Usage: npm run build && node bench/tools/pool.mjs [--baseline bare] [--goal 0.95] [--same A=B]... SET...';

let parsed;
try {
  parsed = parseArgs({
    options: {
      baseline: { type: 'string', default: 'bare' },
      goal: { type: 'string' },
      same: { type: 'string', multiple: true, default: [] },
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
const same = new Map();
for (const pair of values.same) {
  const [from, to, ...rest] = pair.split('=');
  if (!from || !to || rest.length > 0) {
    console.error(`pool: --same must be VARIANT=VARIANT, got ${JSON.stringify(pair)}`);
    process.exit(2);
  }
  same.set(from, to);
}
const sets = [];
for (const file of positionals) {
  try {
    const set = readSet(readFileSync(file, 'utf8'));
    for (const round of set.measured) {
      for (const [from, to] of same) {
        if (round.cells[from] === undefined) continue;
        round.cells[to] = round.cells[from];
        delete round.cells[from];
      }
    }
    sets.push(set);
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
/** A `.late` twin is measured against the baseline's twin, when the sets have it. */
const twinBase = variants.includes(late(baseline)) ? late(baseline) : baseline;
const baseOf = (v) => (v.endsWith('.late') && !baseline.endsWith('.late') ? twinBase : baseline);
console.log(`pool: ${sets.length} sets, ${rounds} rounds; ratio to ${baseline}`);
for (const v of variants) {
  if (v === baseline || v === twinBase) continue;
  const base = baseOf(v);
  const ratios = sets.flatMap((s) => s.measured.map((r) => r.cells[v].rps / r.cells[base].rps));
  const ratio = median(ratios);
  const interval = intervalOf(sets, v, base);
  const span = interval.map((x) => x.toFixed(3)).join('–');
  const said = goal === undefined ? '' : `  >= ${goal}: ${verdict(ratio, interval, goal)}`;
  const of = base === baseline ? '' : ` of ${base}`;
  console.log(`  ${v.padEnd(24)} ${ratio.toFixed(3)}${of} (95 % interval ${span})${said}`);
}

/** A round's mean over `v`'s processes of late/whole requests/s (or of its one figure). */
function rise(cells, v) {
  const whole = cells[v].processes ?? [cells[v]];
  const part = cells[late(v)].processes ?? [cells[late(v)]];
  return mean(whole.map((p, k) => part[k].rps / p.rps));
}
const twins = variants.filter((v) => v !== baseline && variants.includes(late(v)));
if (twins.length > 0 && variants.includes(late(baseline))) {
  console.log(
    `a slot's late part against the whole, over ${baseline}'s (mean, median, rounds above 1)`,
  );
  for (const v of twins) {
    const rises = sets.flatMap((s) =>
      s.measured.map((r) => rise(r.cells, v) / rise(r.cells, baseline)),
    );
    const above = rises.filter((x) => x > 1).length;
    console.log(
      `  ${v.padEnd(24)} ${mean(rises).toFixed(3)}, ${median(rises).toFixed(3)}, ${above} of ${rises.length}`,
    );
  }
}
