#!/usr/bin/env node
/**
 * Who calls a function in a CPU profile, and what it costs on which lines:
 * the self time of every node named FUNCTION, in µs per request (divided by
 * the request count bench/tools/profile-variant.mjs prints, warm-up included),
 * grouped by its nearest callers; then its self time by source line. For a
 * function whose cost differs between two profiles (bench/tools/cpuprofile-diff.mjs)
 * when its callers do not.
 *
 *   node bench/tools/cpuprofile-callers.mjs .prof/createAgent/X.cpuprofile nextTick 220000 [--depth 4]
 */
import { parseArgs } from 'node:util';
import { readProfile } from '../lib/cpuprofile.mjs';

const { values, positionals } = parseArgs({
  options: { depth: { type: 'string', default: '4' }, top: { type: 'string', default: '8' } },
  allowPositionals: true,
});
if (positionals.length !== 3) {
  console.log(
    'Usage: node bench/tools/cpuprofile-callers.mjs PROFILE FUNCTION REQUESTS [--depth N] [--top N]',
  );
  process.exit(2);
}
const [file, name, requestsArg] = positionals;
const requests = Number(requestsArg);
const depth = Number(values.depth);
const top = Number(values.top);
for (const [option, n] of Object.entries({ requests, depth, top })) {
  if (!Number.isInteger(n) || n < 1) {
    console.error(`cpuprofile-callers: ${option} must be an integer >= 1, got ${n}`);
    process.exit(2);
  }
}

const { nodes, selfUs } = readProfile(file);
const parentOf = new Map();
for (const node of nodes.values())
  for (const child of node.children ?? []) parentOf.set(child, node.id);
const perRequest = (us) => (us / requests).toFixed(3);

const frame = ({ callFrame: { functionName, url, lineNumber } }) =>
  `${functionName || '(anonymous)'} ${url.split('/').slice(-2).join('/')}:${lineNumber + 1}`;

const byCallers = new Map();
const byLine = new Map();
let total = 0;
for (const [id, us] of selfUs) {
  const node = nodes.get(id);
  if (node.callFrame.functionName !== name) continue;
  total += us;
  const chain = [];
  for (let p = parentOf.get(id); p !== undefined && chain.length < depth; p = parentOf.get(p)) {
    chain.push(frame(nodes.get(p)));
  }
  const key = chain.join(' < ');
  byCallers.set(key, (byCallers.get(key) ?? 0) + us);
  for (const { line, ticks } of node.positionTicks ?? []) {
    byLine.set(line, (byLine.get(line) ?? 0) + ticks);
  }
}

console.log(`${name}: ${perRequest(total)} µs a request of self time`);
console.log('by callers');
for (const [chain, us] of [...byCallers].sort((a, b) => b[1] - a[1]).slice(0, top)) {
  console.log(`  ${perRequest(us).padStart(7)}  ${chain}`);
}
console.log('by line (ticks of the line-level samples)');
for (const [line, ticks] of [...byLine].sort((a, b) => b[1] - a[1]).slice(0, top)) {
  console.log(`  line ${String(line).padStart(5)}  ${ticks}`);
}
