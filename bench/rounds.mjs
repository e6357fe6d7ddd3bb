/**
 * Interleaved rounds over variants that each run in their own process
 * (bench/variant-child.mjs), against one keep-alive server in another
 * (bench/server.mjs). Each round measures every variant for `duration` s,
 * one after the other, in an order that rotates every round, so the
 * machine's drift falls on all of them; ratios are taken within a round
 * against each variant's baseline (`baselines[variant]`), then the median over the rounds. The 1-minute load
 * average is sampled at every round.
 *
 *   const result = await runRounds({ name, file, variants, baselines, duration,
 *                                    rounds, warmup, concurrency, bodyBytes });
 */
import { fork } from 'node:child_process';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { startServer } from './child-server.mjs';

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

export const median = (values) => {
  const s = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};

export async function runRounds(config) {
  const { name, file, variants, duration, rounds, warmup, concurrency } = config;
  const baseOf = (v) => config.baselines[v];
  const log = config.log ?? ((m) => console.error(m));
  const maxSeconds = Math.ceil((rounds + warmup) * variants.length * duration * 1.5 + 60);
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
    for (const v of variants) {
      const profiled = (config.profile ?? '').split(',').includes(v);
      const execArgv = profiled ? ['--cpu-prof', `--cpu-prof-dir=${config.profileDir}/${v}`] : [];
      children[v] = child(maxSeconds + 10, execArgv);
      info[v] = (await children[v].ask({ type: 'setup', file, variant: v, url })).info;
    }
    let started = 0;
    const out = [];
    for (let r = 0; r < warmup + rounds; r++) {
      const order = variants.map((_, i) => variants[(i + r) % variants.length]);
      const load = loadavg()[0];
      const cells = {};
      for (const v of order) {
        const res = await children[v].ask({ type: 'measure', duration, concurrency });
        started += res.ok + res.failed;
        if (res.failed > 0) throw new Error(`${v}: ${res.failed} failed; first: ${res.error}`);
        cells[v] = { rps: (res.ok * 1000) / res.ms, cpuPerRequest: (res.cpu * 1000) / res.ok };
      }
      for (const v of variants) {
        cells[v].ratio = cells[v].rps / cells[baseOf(v)].rps;
        cells[v].cpuRatio = cells[baseOf(v)].cpuPerRequest / cells[v].cpuPerRequest;
      }
      const round = { round: r - warmup + 1, warmup: r < warmup, load, order, cells };
      out.push(round);
      log(
        `  ${round.warmup ? 'warm-up' : `round ${round.round}`} (load ${load.toFixed(2)}): ` +
          variants
            .map((v) => `${v} ${Math.round(cells[v].rps)} (${cells[v].ratio.toFixed(3)})`)
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
      };
    }
    const loads = measured.map((r) => r.load);
    return {
      summary,
      rounds: out,
      info,
      load: { min: Math.min(...loads), max: Math.max(...loads) },
      requests: stats.requests,
      connections: stats.connections,
    };
  } finally {
    for (const c of Object.values(children)) {
      await c.ask({ type: 'close' }).catch(() => {});
    }
    server.stop();
    clearTimeout(limit);
  }
}

/** Prints `summary` as a table, ratios against each variant's baseline. */
export function printTable(result, variants, baselines, goals = {}) {
  const rows = [
    ['variant', 'rps (median)', 'ratio', 'of', 'range', 'CPU µs/req', 'CPU ratio', 'goal'],
  ];
  for (const v of variants) {
    const s = result.summary[v];
    const goal = goals[v];
    rows.push([
      v,
      Math.round(s.rps).toLocaleString('en-US'),
      s.ratio.toFixed(3),
      baselines[v],
      `${s.ratioMin.toFixed(3)}–${s.ratioMax.toFixed(3)}`,
      s.cpuPerRequest.toFixed(1),
      s.cpuRatio.toFixed(3),
      goal === undefined ? '' : `>= ${goal} ${s.ratio >= goal ? 'met' : 'NOT met'}`,
    ]);
  }
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => row[i].length)));
  console.log('');
  for (const row of rows) console.log(row.map((c, i) => c.padStart(widths[i])).join('  '));
  console.log('');
}
