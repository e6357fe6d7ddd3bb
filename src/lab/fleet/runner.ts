/**
 * Fleet runs (`staunch lab --mode live --fleet P --store redis://…`): P
 * processes (`startFleet`, ./harness.ts) share the logical requests
 * round robin and one live upstream, each running the `staunch` strategy
 * (./member.ts). The fleet runs once with local state in every process
 * (`local`) and, with a Redis store, once more with the state shared through
 * it (`shared`, a fresh key prefix per run), so that the result compares the two.
 */
import { randomBytes } from 'node:crypto';
import { redactUrl } from '../../internal/redact.js';
import { connectRedisStore } from '../../redis/connect.js';
import { redisStoreDefaults } from '../../redis/store.js';
import type { Json } from '../../store/store.js';
import type { FromServer } from '../live/protocol.js';
import { phaseLimit, startUpstream, type Upstream, wall, warmUp } from '../live/runner.js';
import type { LabConfig } from '../options.js';
import type { FleetPhaseInfo, NamedTrace } from '../result.js';
import { TraceRecorder } from '../trace.js';
import { startFleet } from './harness.js';
import type { FleetMemberInput, FleetMemberResult } from './member.js';

/**
 * ms to wait for one decision of the shared store: the store's default, so
 * that the lab measures what users get (a key degrades only after repeated
 * timeouts, and the start does not count; see docs/fleet.md).
 */
export const FLEET_STORE_TIMEOUT: number = redisStoreDefaults.timeout;

const MEMBER = new URL('./member.js', import.meta.url);

/**
 * Checks that the Redis of `url` answers (connects, then closes). Rejects with
 * one line, the URL's password redacted.
 */
export async function checkRedis(url: string, connectTimeout = 3000): Promise<void> {
  let connection: Awaited<ReturnType<typeof connectRedisStore>>;
  try {
    connection = await connectRedisStore(url, { connectTimeout });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new Error(message.split('\n')[0]!.replace(/^connectRedisStore: /, ''));
  }
  await connection.close();
}

/** The names of a fleet run's phases, in order. */
export function fleetPhases(config: LabConfig): ('local' | 'shared')[] {
  return config.store === 'local' ? ['local'] : ['local', 'shared'];
}

async function runFleetPhase(
  config: LabConfig,
  arrivals: ArrayLike<number>,
  upstream: Upstream,
  tag: 'local' | 'shared',
  runId: string,
  progress: (line: string) => void,
): Promise<NamedTrace & { members: FleetMemberResult[] }> {
  const n = arrivals.length;
  const p = config.fleet;
  // Members need a moment to start, connect and load: the run begins after it.
  const slack = 1500 + 250 * p;
  const t0 = wall() + slack;
  await upstream.ask({ type: 'phase', server: config.server, seed: config.seed, t0 }, 'ready');
  const limit = phaseLimit(config);
  const inputs: FleetMemberInput[] = Array.from({ length: p }, () => ({
    url: `http://127.0.0.1:${upstream.port}`,
    t0,
    ids: [],
    times: [],
    attempts: config.attempts,
    deadline: config.deadline,
    clients: Math.max(1, Math.round(config.clients / p)),
    limit,
  }));
  for (let i = 0; i < n; i++) {
    inputs[i % p]!.ids.push(i);
    inputs[i % p]!.times.push(arrivals[i]!);
  }
  const began = performance.now();
  const fleet = startFleet({
    processes: p,
    module: MEMBER,
    store: tag === 'local' ? 'local' : config.store,
    storeOptions:
      tag === 'local'
        ? {}
        : { prefix: `staunch-lab:${runId}:${tag}:`, timeout: FLEET_STORE_TIMEOUT },
    // Each member reads only its own share; the input is the same JSON for all.
    input: { members: inputs } as unknown as Json,
    timeout: slack + limit + 30_000,
  });
  const label = `${tag} (${p} processes)`;
  const report = setInterval(() => {
    const s = Math.max(0, (wall() - t0) / 1000).toFixed(1);
    progress(`live ${config.scenario} · fleet ${label}: ${s} s`);
  }, 500);
  let results: Json[];
  try {
    results = await fleet.results;
  } finally {
    clearInterval(report);
  }
  const members = results as unknown as FleetMemberResult[];
  const trace = new TraceRecorder(n);
  for (const m of members) {
    for (let k = 0; k < m.ids.length; k++) {
      const i = m.ids[k]!;
      trace.start[i] = m.start[k]!;
      trace.settle(i, m.end[k]!, m.ok[k] === 1);
    }
    for (const [reason, count] of Object.entries(m.outcomes)) {
      for (let c = 0; c < count; c++) trace.outcome(reason);
    }
  }
  const stats = (await upstream.ask({ type: 'stats' }, 'stats')) as Extract<
    FromServer,
    { type: 'stats' }
  >;
  for (let i = 0; i < stats.arrivals.length; i++) {
    trace.attempt(stats.arrivals[i]!, stats.statuses[i]!, stats.attempts[i]!);
  }
  const where =
    tag === 'local' ? 'its own memoryStore()' : `the Redis store at ${redactUrl(config.store)}`;
  return {
    name: tag,
    description: `staunch defaults in ${p} processes, each keeping its policy state in ${where}`,
    trace,
    wallMs: performance.now() - began - slack,
    members,
  };
}

/**
 * Runs the fleet phases of `config` against one live upstream and returns
 * their traces (named `local`, then `shared`) and what the members reported.
 */
export async function runFleet(
  config: LabConfig,
  arrivals: ArrayLike<number>,
  progress: (line: string) => void,
): Promise<{ traces: NamedTrace[]; phases: FleetPhaseInfo[] }> {
  const phases = fleetPhases(config);
  const runId = `${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
  const lifetime = phases.length * (phaseLimit(config) + 45_000) + 10_000;
  const upstream = await startUpstream(
    lifetime,
    (config.attempts + 1) * config.requests * phases.length + 1000,
  );
  const traces: NamedTrace[] = [];
  const info: FleetPhaseInfo[] = [];
  try {
    progress(`live ${config.scenario}: warming up`);
    await warmUp(config, upstream);
    for (const tag of phases) {
      const r = await runFleetPhase(config, arrivals, upstream, tag, runId, progress);
      const { members, ...trace } = r;
      traces.push(trace);
      info.push({
        name: tag,
        degradedProcesses: members.filter((m) => m.degraded > 0).length,
        lateMs: Math.max(0, ...members.map((m) => m.late)),
      });
      progress(`live ${config.scenario} · fleet ${tag} done`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  } finally {
    upstream.stop();
  }
  return { traces, phases: info };
}
