#!/usr/bin/env node
/**
 * Summarizes a V8 CPU profile written by `node --cpu-prof`: the functions with
 * the most self time, overall and within staunch's dist/ files, plus the
 * total time by file.
 *
 *   node --cpu-prof --cpu-prof-dir=.prof bench/fetch-overhead.mjs
 *   node bench/tools/cpuprofile-summary.mjs .prof/*.cpuprofile [--top 25]
 */
import { parseArgs } from 'node:util';
import { readProfile } from '../lib/cpuprofile.mjs';

const { values, positionals } = parseArgs({
  options: {
    top: { type: 'string', default: '25' },
    help: { type: 'boolean', short: 'h', default: false },
  },
  allowPositionals: true,
});
if (values.help || positionals.length === 0) {
  console.log('Usage: node bench/tools/cpuprofile-summary.mjs FILE.cpuprofile… [--top N]');
  process.exit(values.help ? 0 : 2);
}
const top = Number(values.top);

/** Short location: the path from dist/ or node_modules/ on, or node:internal. */
function where(url) {
  if (url === '') return '(native)';
  const path = url.replace(/^file:\/\//, '');
  for (const marker of ['/dist/', '/node_modules/', 'node:']) {
    const i = path.lastIndexOf(marker);
    if (i !== -1) return path.slice(marker === 'node:' ? i : i + 1);
  }
  return path.split('/').slice(-2).join('/');
}

const self = new Map();
const byFile = new Map();
let total = 0;
for (const file of positionals) {
  const { nodes, selfUs } = readProfile(file);
  for (const [id, us] of selfUs) {
    const { callFrame } = nodes.get(id);
    const file = where(callFrame.url);
    const name = `${callFrame.functionName || '(anonymous)'} ${file}:${callFrame.lineNumber + 1}`;
    self.set(name, (self.get(name) ?? 0) + us);
    byFile.set(file, (byFile.get(file) ?? 0) + us);
    total += us;
  }
}

const pct = (us) => `${((us / total) * 100).toFixed(1).padStart(5)}%`;
const ms = (us) => `${(us / 1000).toFixed(0).padStart(7)} ms`;
const list = (title, entries) => {
  console.log(`\n${title}`);
  for (const [name, us] of entries) console.log(`${ms(us)} ${pct(us)}  ${name}`);
};

const sorted = [...self].sort((a, b) => b[1] - a[1]);
console.log(`total sampled: ${ms(total)}`);
list(`top ${top} self time`, sorted.slice(0, top));
const staunch = sorted.filter(([name]) => name.includes(' dist/'));
const staunchTotal = staunch.reduce((n, [, us]) => n + us, 0);
list(
  `staunch dist/ self time: ${ms(staunchTotal).trim()} (${pct(staunchTotal).trim()} of all)`,
  staunch.slice(0, top),
);
list(`self time by file (top ${top})`, [...byFile].sort((a, b) => b[1] - a[1]).slice(0, top));
