/**
 * Reading a V8 CPU profile (`node --cpu-prof`), shared by the
 * bench/tools/cpuprofile-*.mjs tools: its nodes, and the self time of each, in µs.
 * `timeDeltas[i]` is the time before `samples[i]`, charged to that sample's
 * node, so the profiler's uneven intervals are counted as they were.
 */
import { readFileSync } from 'node:fs';

/** The profile in `file`: `nodes` by id, `selfUs` by node id (nodes never sampled are absent). */
export function readProfile(file) {
  const profile = JSON.parse(readFileSync(file, 'utf8'));
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfUs = new Map();
  profile.samples.forEach((id, i) => {
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  return { profile, nodes, selfUs };
}
