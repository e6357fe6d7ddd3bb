#!/usr/bin/env node
/**
 * Who calls a function in a CPU profile, and what it costs on which lines:
 * the self time of every node named FUNCTION, in µs per request (divided by
 * the request count bench/profile-variant.mjs prints, warm-up included),
 * grouped by its nearest callers; then its self time by source line. For a
 * function whose cost differs between two profiles (bench/cpuprofile-diff.mjs)
 * when its callers do not.
 *
 *   node bench/cpuprofile-callers.mjs .prof/createAgent/X.cpuprofile nextTick 220000 [--depth 4]
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({
  options: { depth: { type: 'string', default: '4' }, top: { type: 'string', default: '8' } },
  allowPositionals: true,
});
if (positionals.length !== 3) {
  console.log(
    'Usage: node bench/cpuprofile-callers.mjs PROFILE FUNCTION REQUESTS [--depth N] [--top N]',
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

const profile = JSON.parse(readFileSync(file, 'utf8'));
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parentOf = new Map();
for (const n of profile.nodes) for (const child of n.children ?? []) parentOf.set(child, n.id);
// µs of one sample: the profile's span over its sample count.
const sampleUs = (profile.endTime - profile.startTime) / profile.samples.length;
const perRequest = (samples) => ((samples * sampleUs) / requests).toFixed(3);

const frame = (node) => {
  const { functionName, url, lineNumber } = node.callFrame;
  const where = url.split('/').slice(-2).join('/');
  return `${functionName || '(anonymous)'} ${where}:${lineNumber + 1}`;
};

const hits = new Map();
for (const id of profile.samples) hits.set(id, (hits.get(id) ?? 0) + 1);

const byCallers = new Map();
const byLine = new Map();
let total = 0;
for (const node of profile.nodes) {
  if (node.callFrame.functionName !== name) continue;
  const samples = hits.get(node.id) ?? 0;
  total += samples;
  const chain = [];
  for (
    let p = parentOf.get(node.id);
    p !== undefined && chain.length < depth;
    p = parentOf.get(p)
  ) {
    chain.push(frame(byId.get(p)));
  }
  const key = chain.join(' < ');
  byCallers.set(key, (byCallers.get(key) ?? 0) + samples);
  for (const { line, ticks } of node.positionTicks ?? []) {
    byLine.set(line, (byLine.get(line) ?? 0) + ticks);
  }
}

console.log(`${name}: ${perRequest(total)} µs a request of self time`);
console.log('by callers');
for (const [chain, samples] of [...byCallers].sort((a, b) => b[1] - a[1]).slice(0, top)) {
  console.log(`  ${perRequest(samples).padStart(7)}  ${chain}`);
}
console.log('by line (ticks of the line-level samples)');
for (const [line, ticks] of [...byLine].sort((a, b) => b[1] - a[1]).slice(0, top)) {
  console.log(`  line ${String(line).padStart(5)}  ${ticks}`);
}
