/**
 * `--mode live`: the same scenario on real sockets. The upstream is a
 * `node:http` server in a child process on 127.0.0.1 (./server.ts); each
 * strategy is a real `createFetch` over the global fetch, configured as in
 * the simulator; peers (bench/peers) are any `LiveClient`. Everything is
 * bounded: each phase by the span plus the deadline plus a grace, the child
 * by a lifetime and a request limit.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createFetch, type FetchLike } from '../../fetch.js';
import { memoryStore } from '../../store/memory.js';
import type { LabConfig, StrategyName } from '../options.js';
import type { NamedTrace } from '../result.js';
import { isAnswer, PACING_HEADERS } from '../server-model.js';
import { strategyConfig } from '../strategies.js';
import { TraceRecorder } from '../trace.js';
import { type FromServer, LAB_ID_HEADER, type ToServer } from './protocol.js';

/** One logical request performed by a live client; resolves with the final status. */
export type LiveRequest = (
  url: string,
  headers: Record<string, string>,
  signal: AbortSignal,
) => Promise<{ status: number }>;

/** A client the live mode can measure: a staunch strategy or a peer library. */
export interface LiveClient {
  readonly name: string;
  /** Its configuration, in one line. */
  readonly description: string;
  /**
   * Builds the client for one run. `attempts` is the cap (first included),
   * `deadline` the ms each logical request may take; `outcome(reason)`
   * counts why a request failed, when the client can tell.
   */
  create(settings: {
    attempts: number;
    deadline: number;
    outcome: (reason: string) => void;
  }): LiveRequest | Promise<LiveRequest>;
}

/**
 * The global fetch with the server's pacing headers removed from every
 * response: what a pure retry loop's executor sees (see strategies.ts).
 */
export const withoutPacing: FetchLike = async (input, init) => {
  const res = await globalThis.fetch(input, init);
  if (!PACING_HEADERS.some((name) => res.headers.has(name))) return res;
  const headers = new Headers(res.headers);
  for (const name of PACING_HEADERS) headers.delete(name);
  return new Response(res.body, { status: res.status, statusText: res.statusText, headers });
};

/**
 * A staunch strategy as a live client: `createFetch` with the strategy's
 * configuration, `clients` of them (round robin), sharing one state store
 * when `sharedStore`.
 */
export function strategyClient(
  name: StrategyName,
  clients = 1,
  sharedStore = false,
  hedgeDelay?: number,
): LiveClient {
  const s = strategyConfig(name, hedgeDelay);
  return {
    name,
    description: s.description,
    create({ attempts, deadline, outcome }) {
      const store = sharedStore ? memoryStore() : undefined;
      const fetches = Array.from({ length: clients }, () =>
        createFetch({
          retry: { attempts, ...(s.backoff !== undefined && { backoff: s.backoff }) },
          timeout: { total: deadline },
          ...(s.hedge !== undefined && { hedge: s.hedge }),
          ...s.policies,
          ...(store !== undefined && { store }),
          ...(!s.pacing && { fetch: withoutPacing }),
          on: { giveUp: (event) => outcome(event.reason) },
        }),
      );
      let next = 0;
      return async (url, headers, signal) => {
        const fetch = fetches[next++ % fetches.length]!;
        const res = await fetch(url, { headers, signal });
        await res.arrayBuffer();
        return { status: res.status };
      };
    },
  };
}

const SERVER_MODULE = new URL('./server.js', import.meta.url);
/** Wall-clock ms with sub-ms precision, comparable across processes of one machine. */
export const wall = (): number => performance.timeOrigin + performance.now();

/** The live upstream child process, with a typed request/response over IPC. */
export interface Upstream {
  port: number;
  ask(message: ToServer, expect: FromServer['type']): Promise<FromServer>;
  stop(): void;
}

/** Starts the live upstream (built package only); it stops after `lifetime` ms or `maxRequests`. */
export async function startUpstream(lifetime: number, maxRequests: number): Promise<Upstream> {
  const path = fileURLToPath(SERVER_MODULE);
  if (!existsSync(path)) {
    throw new Error(
      `lab: live mode needs the built package (${path} is missing): run npm run build`,
    );
  }
  const child: ChildProcess = fork(path, [String(lifetime), String(maxRequests)], {
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    execArgv: [],
  });
  const waiters: { type: string; resolve: (m: FromServer) => void; reject: (e: Error) => void }[] =
    [];
  let exited: Error | undefined;
  child.on('message', (m: FromServer) => {
    const i = waiters.findIndex((w) => w.type === m.type);
    if (i >= 0) waiters.splice(i, 1)[0]!.resolve(m);
  });
  child.on('exit', (code) => {
    exited = new Error(`lab: the live server exited (code ${code})`);
    for (const w of waiters.splice(0)) w.reject(exited);
  });
  const wait = (type: FromServer['type']) =>
    new Promise<FromServer>((resolve, reject) => {
      if (exited) reject(exited);
      else waiters.push({ type, resolve, reject });
    });
  const listening = (await wait('listening')) as { port: number };
  return {
    port: listening.port,
    ask(message, expect) {
      const reply = wait(expect);
      child.send(message);
      return reply;
    },
    stop() {
      if (child.connected) child.send({ type: 'stop' } satisfies ToServer);
      child.disconnect?.();
      setTimeout(() => child.kill(), 2_000).unref();
    },
  };
}

/** Bounds of one phase: the span, the deadline, and a grace for the last responses. */
export function phaseLimit(config: LabConfig): number {
  return config.span + config.deadline + 5_000;
}

async function runPhase(
  config: LabConfig,
  arrivals: ArrayLike<number>,
  upstream: Upstream,
  client: LiveClient,
  label: string,
  progress: (line: string) => void,
): Promise<NamedTrace> {
  const closed = config.arrivals === 'closed';
  const n = closed ? 0 : arrivals.length;
  const trace = new TraceRecorder(n);
  const request = await client.create({
    attempts: config.attempts,
    deadline: config.deadline,
    outcome: (reason) => trace.outcome(reason),
  });
  const url = `http://127.0.0.1:${upstream.port}/v1/complete`;
  // One controller per request: a signal shared by thousands of requests would carry
  // thousands of listeners (the rate limiter adds one per waiter).
  const controllers = new Set<AbortController>();
  let timedOut = false;
  const t0 = wall() + 50;
  await upstream.ask({ type: 'phase', server: config.server, seed: config.seed, t0 }, 'ready');
  const began = performance.now();
  const elapsed = () => wall() - t0;
  let next = 0;
  let done!: () => void;
  const finished = new Promise<void>((resolve) => {
    done = resolve;
  });
  let loops = closed ? Math.max(1, config.concurrency) : 0;
  const settle = (i: number, ok: boolean) => {
    trace.settle(i, elapsed(), ok);
    if (!closed && trace.settled === n) done();
  };
  const launch = (i: number): Promise<void> => {
    trace.start[i] = elapsed();
    const controller = new AbortController();
    controllers.add(controller);
    return request(url, { [LAB_ID_HEADER]: String(i) }, controller.signal)
      .then(
        (r) => settle(i, isAnswer(r.status)),
        (error: unknown) => {
          const code = (error as { code?: unknown } | null)?.code;
          if (typeof code !== 'string' || !code.startsWith('STAUNCH_')) {
            trace.outcome(timedOut ? 'lab-time-limit' : String(code ?? 'error'));
          }
          settle(i, false);
        },
      )
      .finally(() => controllers.delete(controller));
  };
  /** A closed-loop client: its next request the moment the previous one settled, until the span. */
  const loop = async (): Promise<void> => {
    while (!timedOut && elapsed() < config.span && trace.start.length < config.requests) {
      await launch(trace.begin(elapsed()));
    }
    if (--loops === 0) done();
  };
  const tick = () => {
    const now = elapsed();
    while (next < n && arrivals[next]! <= now) void launch(next++);
    if (next < n) setTimeout(tick, Math.max(0, arrivals[next]! - elapsed()));
  };
  const first = Math.max(0, t0 - wall());
  if (closed) setTimeout(() => Array.from({ length: loops }, loop), first);
  else setTimeout(tick, first);
  const report = setInterval(() => {
    const s = (elapsed() / 1000).toFixed(1);
    const of = closed ? `${trace.start.length} sent` : `${n}`;
    progress(`live ${config.scenario} · ${label}: ${trace.settled}/${of} settled, ${s} s`);
  }, 500);
  const limit = setTimeout(() => {
    // Every request was issued by then (the limit is past the span): end the stragglers.
    timedOut = true;
    for (const c of controllers) c.abort(new Error('lab: phase time limit'));
  }, phaseLimit(config));
  try {
    if (n > 0 || closed) await finished;
  } finally {
    clearInterval(report);
    clearTimeout(limit);
  }
  const stats = (await upstream.ask({ type: 'stats' }, 'stats')) as Extract<
    FromServer,
    { type: 'stats' }
  >;
  for (let i = 0; i < stats.arrivals.length; i++) {
    trace.attempt(stats.arrivals[i]!, stats.statuses[i]!, stats.attempts[i]!);
  }
  trace.work = stats.work;
  return {
    name: client.name,
    description: client.description,
    trace,
    wallMs: performance.now() - began,
  };
}

/**
 * Warms the upstream and this process up (JIT, the global fetch's connection
 * pool) before the measured phases: without it the first phase ran against a
 * cold server and client and lost about ten points of success to that alone.
 */
export async function warmUp(config: LabConfig, upstream: Upstream): Promise<void> {
  const server = { ...config.server, capacity: 1e9, burst: 1e9, outages: [], failureRate: 0 };
  await upstream.ask({ type: 'phase', server, seed: config.seed, t0: wall() }, 'ready');
  const url = `http://127.0.0.1:${upstream.port}/warm-up`;
  for (let round = 0; round < 6; round++) {
    await Promise.all(
      Array.from({ length: 50 }, () =>
        fetch(url).then(
          (r) => r.arrayBuffer(),
          () => undefined,
        ),
      ),
    );
  }
}

/**
 * Runs every strategy of `config` (then every peer) against one live
 * upstream, one after the other, and returns their traces.
 */
export async function runLive(
  config: LabConfig,
  arrivals: ArrayLike<number>,
  hooks: { progress: (line: string) => void; peers: readonly LiveClient[] },
): Promise<NamedTrace[]> {
  const clients = [
    ...config.strategies.map((name) =>
      strategyClient(name, config.clients, config.sharedStore, config.hedgeDelay),
    ),
    ...hooks.peers,
  ];
  const lifetime = clients.length * (phaseLimit(config) + 5_000) + 10_000;
  const upstream = await startUpstream(
    lifetime,
    (config.attempts + 1) * config.requests * clients.length,
  );
  const out: NamedTrace[] = [];
  try {
    hooks.progress(`live ${config.scenario}: warming up`);
    await warmUp(config, upstream);
    for (const [i, client] of clients.entries()) {
      const label = `${client.name} (${i + 1}/${clients.length})`;
      out.push(await runPhase(config, arrivals, upstream, client, label, hooks.progress));
      // Let the sockets of this phase close before the next one starts.
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  } finally {
    upstream.stop();
  }
  return out;
}
