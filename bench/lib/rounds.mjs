/**
 * Interleaved rounds over variants that each run in their own process
 * (bench/lib/variant-child.mjs), against one keep-alive server in another
 * (bench/lib/server.mjs). Each round measures every variant for `duration` s,
 * one after the other, in an order that rotates every round, so the
 * machine's drift falls on all of them; ratios are taken within a round
 * against each variant's baseline (`baselines[variant]`), then the median over the rounds. The 1-minute load
 * average is sampled at every round.
 *
 * `nodeFlags` (default none): node/V8 flags for every variant's processes.
 *
 * `skip` (ms, default 0): above 0, every variant `v` gets a twin `v.late`
 * measured in the same slots from `skip` ms in (bench/lib/variant-child.mjs),
 * against its baseline's twin: whether a variant's cost lies in a slot's
 * first part shows as `v.late` reading higher than `v`, pair by pair.
 *
 * `processes` (default 1): how many processes run each variant. On a small
 * machine one process of a variant can run 10–30 % off another of the same
 * build for its whole life (its heap layout, its JIT's choices), which no
 * number of rounds averages out; with several, a variant's figure in a round
 * is the mean of its processes', and `processRange` tells how far apart the
 * processes were (each one's median requests/s over the rounds, against the
 * baseline's mean).
 *
 *   const result = await runRounds({ name, file, variants, baselines, duration,
 *                                    rounds, warmup, concurrency, bodyBytes, processes });
 *
 * `result.variants` and `result.baselines` name what it measured: the
 * config's, and with `skip` their twins.
 */
import { fork } from 'node:child_process';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { seededRandom } from '../../dist/lab/random.js';
import { startServer } from './child-server.mjs';
import { mean, median, pooledInterval, verdict } from './interval.mjs';

const CHILD = fileURLToPath(new URL('./variant-child.mjs', import.meta.url));

function child(maxSeconds, execArgv) {
  const proc = fork(CHILD, [String(maxSeconds)], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    execArgv,
  });
  const ask = (message) =>
    new Promise((resolve, reject) => {
      const onExit = (code) => reject(new Error(`variant process exited (${code})`));
      proc.once('exit', onExit);
      proc.once('message', (reply) => {
        proc.off('exit', onExit);
        if (reply.type === 'error') reject(new Error(reply.error));
        else resolve(reply);
      });
      proc.send(message);
    });
  return { proc, ask };
}

/**
 * The 95 % interval of `variant`'s ratio to `baseline` over `sets` (bench/lib/interval.mjs,
 * `pooledInterval`), drawn from the lab's seeded generator, seeded afresh each time:
 * the same data prints the same interval.
 */
export function intervalOf(sets, variant, baseline) {
  return pooledInterval(sets, variant, baseline, seededRandom(0x5ca1ab1e, 'bench:interval'));
}

/** The name of `variant`'s twin measured without a slot's first part (`skip`). */
export const late = (variant) => `${variant}.late`;

export async function runRounds(config) {
  const { name, file, duration, rounds, warmup, concurrency } = config;
  const processes = config.processes ?? 1;
  const skip = config.skip ?? 0;
  const variants = [...config.variants, ...(skip > 0 ? config.variants.map(late) : [])];
  const baselines = { ...config.baselines };
  if (skip > 0) for (const v of config.variants) baselines[late(v)] = late(baselines[v]);
  const log = config.log ?? ((m) => console.error(m));
  const slots = config.variants.flatMap((v) => Array.from({ length: processes }, (_, k) => [v, k]));
  const maxSeconds = Math.ceil((rounds + warmup) * slots.length * duration * 1.5 + 60);
  const limit = setTimeout(() => {
    console.error(`${name}: exceeded the time limit of ${maxSeconds} s, aborting`);
    process.exit(1);
  }, maxSeconds * 1000);
  limit.unref();
  const server = await startServer({
    name,
    maxSeconds: maxSeconds + 10,
    bodyBytes: config.bodyBytes,
  });
  const url = `http://127.0.0.1:${server.port}/bench`;
  const children = {};
  const info = {};
  try {
    for (const [v, k] of slots) {
      const profiled = k === 0 && (config.profile ?? '').split(',').includes(v);
      const execArgv = [
        ...(config.nodeFlags ?? []),
        ...(profiled ? ['--cpu-prof', `--cpu-prof-dir=${config.profileDir}/${v}`] : []),
      ];
      children[v] ??= [];
      children[v][k] = child(maxSeconds + 10, execArgv);
      info[v] = (await children[v][k].ask({ type: 'setup', file, variant: v, url })).info;
    }
    let started = 0;
    const out = [];
    for (let r = 0; r < warmup + rounds; r++) {
      const order = slots.map((_, i) => slots[(i + r) % slots.length]);
      const load = loadavg()[0];
      const each = Object.fromEntries(variants.map((v) => [v, []]));
      for (const [v, k] of order) {
        const res = await children[v][k].ask({ type: 'measure', duration, concurrency, skip });
        started += res.ok + res.failed;
        if (res.failed > 0) throw new Error(`${v}: ${res.failed} failed; first: ${res.error}`);
        each[v][k] = { rps: (res.ok * 1000) / res.ms, cpuPerRequest: (res.cpu * 1000) / res.ok };
        if (skip > 0) {
          if (res.late === undefined)
            throw new Error(`${v}: no response completed after ${skip} ms`);
          const { ok, ms, cpu } = res.late;
          each[late(v)][k] = { rps: (ok * 1000) / ms, cpuPerRequest: (cpu * 1000) / ok };
        }
      }
      const cells = {};
      for (const v of variants) {
        cells[v] = {
          rps: mean(each[v].map((c) => c.rps)),
          cpuPerRequest: mean(each[v].map((c) => c.cpuPerRequest)),
          ...(processes > 1 && { processes: each[v] }),
        };
      }
      for (const v of variants) {
        cells[v].ratio = cells[v].rps / cells[baselines[v]].rps;
        cells[v].cpuRatio = cells[baselines[v]].cpuPerRequest / cells[v].cpuPerRequest;
      }
      const round = { round: r - warmup + 1, warmup: r < warmup, load, order, cells };
      out.push(round);
      log(
        `  ${round.warmup ? 'warm-up' : `round ${round.round}`} (load ${load.toFixed(2)}): ` +
          variants
            .map((v) => {
              const spread =
                processes > 1 ? ` [${each[v].map((c) => Math.round(c.rps)).join(' ')}]` : '';
              return `${v} ${Math.round(cells[v].rps)}${spread} (${cells[v].ratio.toFixed(3)})`;
            })
            .join(', '),
      );
    }
    const stats = await server.stats();
    if (stats.requests !== started) {
      throw new Error(`the server counted ${stats.requests} requests, the clients ${started}`);
    }
    const measured = out.filter((r) => !r.warmup);
    const summary = {};
    for (const v of variants) {
      const ratios = measured.map((r) => r.cells[v].ratio);
      summary[v] = {
        rps: median(measured.map((r) => r.cells[v].rps)),
        ratio: median(ratios),
        ratioMin: Math.min(...ratios),
        ratioMax: Math.max(...ratios),
        cpuPerRequest: median(measured.map((r) => r.cells[v].cpuPerRequest)),
        cpuRatio: median(measured.map((r) => r.cells[v].cpuRatio)),
        interval: intervalOf([{ measured, processes }], v, baselines[v]),
      };
      if (processes > 1) {
        const base = median(measured.map((r) => r.cells[baselines[v]].rps));
        const own = Array.from({ length: processes }, (_, k) =>
          median(measured.map((r) => r.cells[v].processes[k].rps)),
        );
        summary[v].processRange = [Math.min(...own) / base, Math.max(...own) / base];
      }
    }
    const loads = measured.map((r) => r.load);
    return {
      variants,
      baselines,
      summary,
      rounds: out,
      info,
      load: { min: Math.min(...loads), max: Math.max(...loads) },
      requests: stats.requests,
      connections: stats.connections,
    };
  } finally {
    for (const c of Object.values(children).flat()) {
      await c.ask({ type: 'close' }).catch(() => {});
    }
    server.stop();
    clearTimeout(limit);
  }
}

/** Prints `summary` as a table, ratios against each variant's baseline. */
export function printTable(result, variants, baselines, goals = {}) {
  const pooled = result.summary[variants[0]].processRange !== undefined;
  const rows = [
    [
      'variant',
      'rps (median)',
      'ratio',
      'of',
      '95 % interval',
      'range',
      ...(pooled ? ['processes'] : []),
      'CPU µs/req',
      'CPU ratio',
      'goal',
    ],
  ];
  for (const v of variants) {
    const s = result.summary[v];
    const goal = goals[v];
    const processes = s.processRange?.map((x) => x.toFixed(3)).join('–');
    rows.push([
      v,
      Math.round(s.rps).toLocaleString('en-US'),
      s.ratio.toFixed(3),
      baselines[v],
      s.interval.map((x) => x.toFixed(3)).join('–'),
      `${s.ratioMin.toFixed(3)}–${s.ratioMax.toFixed(3)}`,
      ...(pooled ? [processes] : []),
      s.cpuPerRequest.toFixed(1),
      s.cpuRatio.toFixed(3),
      goal === undefined ? '' : `>= ${goal}: ${verdict(s.ratio, s.interval, goal)}`,
    ]);
  }
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => row[i].length)));
  console.log('');
  for (const row of rows) console.log(row.map((c, i) => c.padStart(widths[i])).join('  '));
  console.log('');
}
