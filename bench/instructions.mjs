#!/usr/bin/env node
/**
 * Instructions a request, counted by valgrind's callgrind, for the variants
 * of bench/undici-variants.mjs: a figure that does not move with the load on
 * the machine or with which core a process lands on, unlike requests/s.
 *
 *   npm run build && node bench/instructions.mjs [--help]
 *
 * Each variant runs bench/tools/profile-variant.mjs under callgrind twice, for
 * `--short` and for `--long` measured requests after the same warm-up, and
 * the difference of the two totals divided by the difference of the counts
 * is the variant's steady-state cost: start-up, import, JIT warm-up and
 * teardown cancel out. Only the client process is counted (the server is a
 * child that valgrind does not follow), every thread of it: V8's compiler
 * and GC threads do the client's work too.
 *
 * V8's compilers are counted apart (bench/lib/callgrind.mjs) and left out of the
 * main figure: a process that has run for a while compiles nothing, and when
 * V8 compiles within a short window is its choice, which moves the window's
 * count by thousands of instructions a request.
 *
 * Ratios are reported as `baseline instructions / variant instructions`: the
 * requests/s the variant would reach against the baseline if time went as
 * instructions do. It does not (a cache miss is not an instruction, and a
 * loopback round trip waits on the server too), so this complements the
 * interleaved rounds of undici-overhead.mjs; it does not replace them.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { readCallgrind } from './lib/callgrind.mjs';

const HELP = `Usage: npm run build && node bench/instructions.mjs [options]

Options:
  --variants <list>   comma-separated variants of bench/undici-variants.mjs
                      (default bare,floor-wrap,createAgent,interceptor)
  --baseline <name>   the variant the others are divided by (default: the first)
  --short <n>         measured requests of the short run  (default 2000)
  --long <n>          measured requests of the long run   (default 12000)
  --warmup <n>        warm-up requests before either run  (default 40000: V8
                      still compiles after 10,000, and that is not steady state)
  --concurrency <n>   requests in flight                  (default 32)
  --repeats <n>       runs of each length a variant, to show the spread (default 1)
  --jobs <n>          valgrind processes at once          (default 2; counts do not
                      depend on the load, only the wall time does)
  --node <path>       the node binary to run under valgrind (default: this one)
  --gc <schedule>     predictable (default): --predictable-gc-schedule, whose
                      young generation is fixed at 4 MB: repeatable, but it
                      collects about four times as often as a busy process.
                      steady: a fixed 16 MB young generation (the size a busy
                      process grows to) and room in the old one; closer to a
                      process in service, but not repeatable (a full
                      collection falls in one window or the other: 2–6 % a
                      request between runs), so give it --repeats.
  --node-flags <list> space-separated flags for it (default: --single-threaded
                      --random-seed=1 --hash-seed=1 and the flags of --gc: no
                      background compiler or GC threads whose timing moves the
                      counts, a GC schedule that does not follow the clock)
  --keep <dir>        keep the callgrind files there (VARIANT.REQUESTS.REPEAT.out),
                      for callgrind_annotate; --dump-instr=yes then, so that
                      bench/tools/callgrind-js.mjs can name the JIT's code
  --json              print the results as JSON
  -h, --help          this help

Every run does the same warm-up first, so that only the measured requests differ.`;

const { values: opts } = parseArgs({
  options: {
    variants: { type: 'string', default: 'bare,floor-wrap,createAgent,interceptor' },
    baseline: { type: 'string' },
    short: { type: 'string', default: '2000' },
    long: { type: 'string', default: '12000' },
    warmup: { type: 'string', default: '40000' },
    concurrency: { type: 'string', default: '32' },
    repeats: { type: 'string', default: '1' },
    jobs: { type: 'string', default: '2' },
    node: { type: 'string', default: process.execPath },
    gc: { type: 'string', default: 'predictable' },
    'node-flags': { type: 'string' },
    keep: { type: 'string' },
    json: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (opts.help) {
  console.log(HELP);
  process.exit(0);
}

/** The V8 flags of each `--gc` schedule (see the help). */
const GC_FLAGS = {
  predictable: '--predictable-gc-schedule',
  steady:
    '--min-semi-space-size=16 --max-semi-space-size=16 --no-memory-reducer --initial-old-space-size=1024',
};
if (!Object.hasOwn(GC_FLAGS, opts.gc)) {
  throw new RangeError(`--gc must be predictable or steady, got ${JSON.stringify(opts.gc)}`);
}
opts['node-flags'] ??= `--single-threaded --random-seed=1 --hash-seed=1 ${GC_FLAGS[opts.gc]}`;

function positiveInteger(name) {
  const value = Number(opts[name]);
  if (!Number.isInteger(value) || value < 1) {
    throw new RangeError(`--${name} must be a positive integer, got ${JSON.stringify(opts[name])}`);
  }
  return value;
}
const short = positiveInteger('short');
const long = positiveInteger('long');
const concurrency = positiveInteger('concurrency');
const repeats = positiveInteger('repeats');
const jobs = positiveInteger('jobs');
if (long <= short) throw new RangeError(`--long (${long}) must be more than --short (${short})`);
const variants = opts.variants.split(',').filter(Boolean);
if (variants.length === 0) throw new RangeError('--variants must name at least one variant');
const baseline = opts.baseline ?? variants[0];
if (!variants.includes(baseline)) {
  throw new RangeError(`--baseline ${JSON.stringify(baseline)} is not among --variants`);
}
// The same warm-up for both lengths: profile-variant.mjs takes it as a fourth argument.
const warmup = positiveInteger('warmup');

const script = fileURLToPath(new URL('./tools/profile-variant.mjs', import.meta.url));
const dir = opts.keep ?? mkdtempSync(join(tmpdir(), 'staunch-callgrind-'));
if (opts.keep !== undefined) mkdirSync(dir, { recursive: true });

/** One callgrind run of `variant` for `requests` measured requests: its `total` and `compile` counts. */
function count(variant, requests, tag) {
  const out = join(dir, `${variant}.${requests}.${tag}.out`);
  const args = [
    '--tool=callgrind',
    `--callgrind-out-file=${out}`,
    // Only the totals are needed unless the files are kept.
    `--dump-instr=${opts.keep === undefined ? 'no' : 'yes'}`,
    '--compress-strings=no',
    '--compress-pos=no',
    opts.node,
    ...opts['node-flags'].split(' ').filter(Boolean),
    script,
    variant,
    String(requests),
    String(concurrency),
    String(warmup),
  ];
  return new Promise((resolve, reject) => {
    const child = spawn('valgrind', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code !== 0) {
        reject(
          new Error(
            `${variant} ×${requests}: valgrind exited with ${code}\n${stdout}\n${stderr.slice(-2000)}`,
          ),
        );
        return;
      }
      try {
        resolve(readCallgrind(out));
      } catch (error) {
        reject(error);
      }
    });
  });
}

const tasks = [];
for (let r = 0; r < repeats; r++) {
  for (const variant of variants) {
    for (const requests of [short, long]) tasks.push({ variant, requests, tag: r });
  }
}
const results = new Map(variants.map((v) => [v, { short: [], long: [] }]));
let next = 0;
async function worker() {
  while (next < tasks.length) {
    const task = tasks[next++];
    const run = await count(task.variant, task.requests, task.tag);
    results.get(task.variant)[task.requests === short ? 'short' : 'long'].push(run);
    if (!opts.json) {
      process.stderr.write(
        `  ${task.variant} ×${task.requests}: ${run.total} instructions, ${run.compile} of them compiling\n`,
      );
    }
  }
}
try {
  await Promise.all(Array.from({ length: Math.min(jobs, tasks.length) }, worker));
} finally {
  if (opts.keep === undefined) rmSync(dir, { recursive: true, force: true });
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
};
// Every pairing of a short and a long run of a variant gives one figure a request,
// without what V8 spent compiling (see the header) or with it.
const perRequest = (v, withCompile) => {
  const { short: s, long: l } = results.get(v);
  const figures = [];
  const of = (run) => (withCompile ? run.total : run.total - run.compile);
  for (const a of s) for (const b of l) figures.push((of(b) - of(a)) / (long - short));
  return figures;
};
const rows = variants.map((variant) => {
  const figures = perRequest(variant, false);
  return {
    variant,
    perRequest: median(figures),
    min: Math.min(...figures),
    max: Math.max(...figures),
    withCompile: median(perRequest(variant, true)),
  };
});
const base = rows.find((row) => row.variant === baseline);
for (const row of rows) {
  row.ratio = base.perRequest / row.perRequest;
  row.ratioWithCompile = base.withCompile / row.withCompile;
}

if (opts.json) {
  console.log(
    JSON.stringify(
      {
        node: process.versions.node,
        nodeFlags: opts['node-flags'],
        short,
        long,
        warmup,
        concurrency,
        rows,
      },
      null,
      2,
    ),
  );
} else {
  const version = execFileSync(opts.node, ['-p', 'process.version'], { encoding: 'utf8' }).trim();
  console.log(
    `node ${version}; ${warmup} warm-up + ${short} / ${long} measured requests, ${concurrency} in flight; ` +
      `ratio = ${baseline}'s instructions / the variant's`,
  );
  console.log(`node flags: ${opts['node-flags']}`);
  console.log(
    '| variant | instructions a request, less compiling | range | ratio | with compiling | ratio |',
  );
  console.log('| --- | ---: | ---: | ---: | ---: | ---: |');
  for (const row of rows) {
    console.log(
      `| ${row.variant} | ${Math.round(row.perRequest)} | ${Math.round(row.min)}–${Math.round(row.max)} | ` +
        `${row.ratio.toFixed(3)} | ${Math.round(row.withCompile)} | ${row.ratioWithCompile.toFixed(3)} |`,
    );
  }
}
