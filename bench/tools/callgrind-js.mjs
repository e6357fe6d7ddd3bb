#!/usr/bin/env node
/**
 * Self instructions a request by function, or by file, from the callgrind
 * files that `bench/instructions.mjs --keep DIR` writes, with V8's JIT code
 * named from the `/tmp/perf-PID.map` that `--perf-basic-prof` makes V8
 * write (pass it in `--node-flags`). Each figure is (long run − short run) /
 * (long − short requests), so start-up and warm-up cancel out.
 *
 *   node bench/tools/callgrind-js.mjs DIR/createAgent.1000.0.out DIR/createAgent.6000.0.out
 *   node bench/tools/callgrind-js.mjs A.short A.long B.short B.long     # B − A
 *   … --by file|function (default file) --top 40
 *   … --callers Builtins_KeyedStoreIC   # who calls it, inclusive instructions a request
 *   … --event I1mr    # another event than instructions: files written with --cache-sim=yes
 *
 * The reading, and how JIT code is named, is bench/lib/callgrind.mjs's.
 */
import { parseArgs } from 'node:util';
import { readCallgrind } from '../lib/callgrind.mjs';

const { values: opts, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    by: { type: 'string', default: 'file' },
    top: { type: 'string', default: '40' },
    callers: { type: 'string' },
    event: { type: 'string', default: 'Ir' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (opts.help || (positionals.length !== 2 && positionals.length !== 4)) {
  console.log(
    'Usage: node bench/tools/callgrind-js.mjs SHORT.out LONG.out [SHORT_B.out LONG_B.out] [--by file|function] [--top N] [--event Ir|I1mr|…]',
  );
  process.exit(opts.help ? 0 : 2);
}
const top = Number(opts.top);
if (!Number.isInteger(top) || top < 1)
  throw new RangeError(`--top must be a positive integer, got ${opts.top}`);

function perRequest(shortFile, longFile) {
  const read = (file) => {
    const r = readCallgrind(file, { by: opts.by, callersOf: opts.callers, event: opts.event });
    return { requests: r.requests, costs: opts.callers === undefined ? r.costs : r.callers };
  };
  const a = read(shortFile);
  const b = read(longFile);
  const n = b.requests - a.requests;
  if (!(n > 0)) throw new Error(`${longFile} must have more requests than ${shortFile}`);
  const out = new Map();
  for (const key of new Set([...a.costs.keys(), ...b.costs.keys()])) {
    out.set(key, ((b.costs.get(key) ?? 0) - (a.costs.get(key) ?? 0)) / n);
  }
  return out;
}

const A = perRequest(positionals[0], positionals[1]);
const B = positionals.length === 4 ? perRequest(positionals[2], positionals[3]) : undefined;
const total = (m) => [...m.values()].reduce((s, v) => s + v, 0);
const rows = [...new Set([...A.keys(), ...(B?.keys() ?? [])])].map((key) => {
  const a = A.get(key) ?? 0;
  const b = B?.get(key) ?? 0;
  return { key, a, b, diff: b - a };
});
if (B === undefined) {
  rows.sort((x, y) => y.a - x.a);
  console.log(`total ${Math.round(total(A))} ${opts.event} a request`);
  for (const r of rows.slice(0, top))
    console.log(`${Math.round(r.a).toString().padStart(8)}  ${r.key}`);
} else {
  rows.sort((x, y) => Math.abs(y.diff) - Math.abs(x.diff));
  console.log(
    `total A ${Math.round(total(A))}, B ${Math.round(total(B))}, B − A ${Math.round(total(B) - total(A))}`,
  );
  const staunch = rows.filter((r) => r.key.startsWith('staunch ')).reduce((s, r) => s + r.diff, 0);
  if (opts.by === 'file') console.log(`staunch's files, B − A: ${Math.round(staunch)}`);
  console.log('     A        B    B − A  key');
  for (const r of rows.slice(0, top)) {
    console.log(
      `${Math.round(r.a).toString().padStart(8)} ${Math.round(r.b).toString().padStart(8)} ${Math.round(r.diff).toString().padStart(8)}  ${r.key}`,
    );
  }
}
