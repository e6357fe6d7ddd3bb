#!/usr/bin/env node
/**
 * Two CPU profiles side by side, in µs of self time per request: A (a
 * baseline, e.g. bare undici.request) and B (e.g. createAgent), each divided
 * by its own request count (bench/tools/profile-variant.mjs prints it; count the
 * warm-up too). Prints the functions whose cost differs most, then the same
 * by file. Idle time is left out.
 *
 *   node bench/tools/cpuprofile-diff.mjs A.cpuprofile 220000 B.cpuprofile 220000 [--top 40]
 */
import { parseArgs } from 'node:util';
import { readProfile } from '../lib/cpuprofile.mjs';

const { values, positionals } = parseArgs({
  options: { top: { type: 'string', default: '40' } },
  allowPositionals: true,
});
if (positionals.length !== 4) {
  console.log(
    'Usage: node bench/tools/cpuprofile-diff.mjs A.cpuprofile N_A B.cpuprofile N_B [--top N]',
  );
  process.exit(2);
}
const top = Number(values.top);

/** Self time by `function file:line`, in µs. */
function load(file) {
  const { nodes, selfUs } = readProfile(file);
  const self = new Map();
  for (const [id, us] of selfUs) {
    const { functionName, url, lineNumber } = nodes.get(id).callFrame;
    let where = url.replace(/^file:\/\//, '');
    for (const marker of ['/dist/', '/node_modules/', '/bench/']) {
      const k = where.indexOf(marker);
      if (k >= 0) {
        where = where.slice(k + 1);
        break;
      }
    }
    const key = `${functionName || '(anonymous)'} ${where}:${lineNumber + 1}`;
    self.set(key, (self.get(key) ?? 0) + us);
  }
  return self;
}

const [fileA, countA, fileB, countB] = positionals;
const a = load(fileA);
const b = load(fileB);
const rows = [];
for (const key of new Set([...a.keys(), ...b.keys()])) {
  if (key.startsWith('(idle)')) continue;
  rows.push([key, (a.get(key) ?? 0) / Number(countA), (b.get(key) ?? 0) / Number(countB)]);
}
const total = (i) => rows.reduce((sum, row) => sum + row[i], 0);
const line = ([key, x, y]) =>
  `${x.toFixed(3).padStart(8)} ${y.toFixed(3).padStart(8)} ${(y - x).toFixed(3).padStart(8)}  ${key}`;
const byChange = (p, q) => Math.abs(q[2] - q[1]) - Math.abs(p[2] - p[1]);
console.log(`µs a request: A ${total(1).toFixed(2)}, B ${total(2).toFixed(2)} (not idle)`);
console.log('       A        B    B − A');
for (const row of rows.sort(byChange).slice(0, top)) console.log(line(row));
const files = new Map();
for (const [key, x, y] of rows) {
  const file = key.slice(key.indexOf(' ') + 1).replace(/:\d+$/, '') || '(native)';
  const f = files.get(file) ?? [file, 0, 0];
  f[1] += x;
  f[2] += y;
  files.set(file, f);
}
console.log('\nby file');
for (const row of [...files.values()].sort(byChange).slice(0, top)) console.log(line(row));
const dist = [...files.values()].filter(([file]) => file.startsWith('dist/'));
console.log(
  `\nstaunch's dist/ files: A ${dist.reduce((s, f) => s + f[1], 0).toFixed(2)}, B ${dist
    .reduce((s, f) => s + f[2], 0)
    .toFixed(2)} µs a request`,
);
