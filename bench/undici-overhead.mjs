#!/usr/bin/env node
/**
 * staunch/undici success-path overhead, every variant in its own process
 * (bench/lib/variant-child.mjs, variants in bench/undici-variants.mjs), against a
 * keep-alive loopback server in another (bench/lib/server.mjs), interleaved
 * rounds (bench/lib/rounds.mjs).
 *
 *   npm run build && node bench/undici-overhead.mjs [--help]
 *
 * `undici.request` variants, as ratios to `bare` (an undici `Agent` of
 * staunch's transport settings):
 * - `bare-imported`: bare in a process that has imported staunch/undici;
 * - `passthrough`: the same with a do-nothing composed interceptor (the
 *   handler-API conversion any composed interceptor pays);
 * - `createAgent`: `createAgent()`, core defaults (goal >= 0.95);
 * - `interceptor`: `new Agent(settings).compose(retryInterceptor())` (goal >= 0.90);
 * - `no-policies`: the same with breaker, budget and rate limiter off;
 * - `createAgent-no-policies`, `createAgent-no-retries`: `createAgent` without
 *   the policies, and without retries and deadlines too;
 * - `createAgent-no-deadlines`: `createAgent({ timeout: false })`, what attempt
 *   deadlines cost;
 * - `floor-subclass`, `floor-wrap`: a `Dispatcher` subclass handing each
 *   request to an `Agent` with the caller's handler, or with a forwarding
 *   handler (the least a retry layer puts in between); `floor-watch`: the
 *   latter with a `undici:client:sendHeaders` subscriber (what the stale-race
 *   probe makes undici publish); `floor-spin`: the latter plus
 *   `STAUNCH_SPIN_NS` (700) of pure CPU a request, to see how a cost measured
 *   without a network (agent-stub-cost.mjs) shows on loopback; `floor-timer`:
 *   floor-wrap beside one ref'd timer re-armed every 100 ms (the steady deadline
 *   list's); `floor-hrtime`: floor-wrap plus a `process.hrtime()` a request;
 *   `floor-policies`: the least a layer with policies on must do for a
 *   success (the probe's subscription, a per-origin record, the clock read at
 *   send and response, a count and a weight for each), and nothing more.
 * fetch variants, as ratios to `global-fetch` (Node's own, its bundled undici):
 * - `staunch-undici-fetch`: `createFetch()` of staunch/undici (goal >= 1.5);
 * - `undici-fetch`: npm undici's `fetch` over an `Agent` of the same settings;
 * - `staunch-fetch`: `createFetch()` of staunch over the global fetch;
 * - `global-fetch-signal`: the global fetch given a fresh `AbortController`
 *   signal per request, the one thing `staunch-fetch` adds that is the
 *   transport's cost (in a process of its own, unlike fetch-overhead.mjs's
 *   `--signal-control`, whose variants share one heap and so one GC).
 *
 * A process per variant matters: the first staunch interceptor subscribes to
 * undici's `undici:client:sendHeaders` channel, which makes undici publish
 * for every request of the process, and importing npm undici before the
 * first global fetch puts npm undici's Agent under the global fetch.
 */
import { parseArgs } from 'node:util';
import { printTable, runRounds } from './lib/rounds.mjs';
import { FETCH_VARIANTS, REQUEST_VARIANTS } from './undici-variants.mjs';

const HELP = `Usage: npm run build && node bench/undici-overhead.mjs [options]

Options:
  --duration <s>      seconds per variant per round          (default 1)
  --rounds <n>        measured rounds                        (default 12)
  --warmup <n>        warm-up rounds, discarded              (default 2)
  --concurrency <n>   requests in flight                     (default 32)
  --processes <n>     processes per variant, pooled in each round (default 1;
                      see bench/lib/rounds.mjs: one process can run 10–30 % off another)
  --body-bytes <n>    response body size                     (default 64)
  --skip <ms>         also measure each slot without its first <ms>, as
                      twin variants named <variant>.late (default 0: none)
  --variants <list>   comma-separated variants, or request / fetch / all (default all);
                      NAME@before: the same on the build in STAUNCH_BEFORE_DIST,
                      NAME@tag: on the build in STAUNCH_DIST_tag
  --profile <list>    write CPU profiles of these variants' processes to --profile-dir/<variant>
  --profile-dir <d>   (default .prof)
  --node-flags=<list> space-separated node/V8 flags for every variant's processes,
                      e.g. --node-flags=--single-threaded-gc (default none)
  --json              print the results as JSON
  -h, --help          this help

Variants: ${[...REQUEST_VARIANTS, ...FETCH_VARIANTS].join(', ')}.`;

function fail(message) {
  console.error(`undici-overhead: ${message}`);
  process.exit(2);
}

let args;
try {
  args = parseArgs({
    options: {
      duration: { type: 'string', default: '1' },
      rounds: { type: 'string', default: '12' },
      warmup: { type: 'string', default: '2' },
      concurrency: { type: 'string', default: '32' },
      processes: { type: 'string', default: '1' },
      'body-bytes': { type: 'string', default: '64' },
      skip: { type: 'string', default: '0' },
      variants: { type: 'string', default: 'all' },
      profile: { type: 'string' },
      'profile-dir': { type: 'string', default: '.prof' },
      'node-flags': { type: 'string', default: '' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  }).values;
} catch (error) {
  fail(`${error.message}\n\n${HELP}`);
}
if (args.help) {
  console.log(HELP);
  process.exit(0);
}
function numberArg(name, min, integer = true) {
  const value = Number(args[name]);
  if (!Number.isFinite(value) || value < min || (integer && !Number.isInteger(value))) {
    fail(`--${name} must be ${integer ? 'an integer' : 'a number'} >= ${min}, got ${args[name]}`);
  }
  return value;
}

const sets = {
  request: REQUEST_VARIANTS,
  fetch: FETCH_VARIANTS,
  all: [...REQUEST_VARIANTS, ...FETCH_VARIANTS],
};
const variants = sets[args.variants] ?? args.variants.split(',');
const base = (v) => v.split('@')[0];
for (const v of variants) {
  if (!sets.all.includes(base(v))) fail(`--variants: unknown variant ${JSON.stringify(v)}`);
}
for (const v of variants) {
  const tag = v.split('@')[1];
  const env = tag === 'before' ? 'STAUNCH_BEFORE_DIST' : `STAUNCH_DIST_${tag}`;
  if (tag !== undefined && process.env[env] === undefined) {
    fail(`variant ${v} needs ${env} (the dist/ of the build to compare with)`);
  }
}
const baselines = Object.fromEntries(
  variants.map((v) => [v, REQUEST_VARIANTS.includes(base(v)) ? 'bare' : 'global-fetch']),
);
for (const v of [...variants]) if (!variants.includes(baselines[v])) variants.unshift(baselines[v]);
for (const v of variants) baselines[v] ??= v;
const rank = (v) => sets.all.indexOf(base(v)) + (v.includes('@') ? 0.5 : 0);
const ordered = [...new Set(variants)].sort((a, b) => rank(a) - rank(b));
const goals = { createAgent: 0.95, interceptor: 0.9, 'staunch-undici-fetch': 1.5 };
for (const v of ordered) if (v.includes('@')) delete goals[v];

const config = {
  name: 'undici-overhead',
  file: new URL('./undici-variants.mjs', import.meta.url).href,
  variants: ordered,
  baselines,
  duration: numberArg('duration', 0.1, false),
  rounds: numberArg('rounds', 1),
  warmup: numberArg('warmup', 0),
  concurrency: numberArg('concurrency', 1),
  processes: numberArg('processes', 1),
  bodyBytes: numberArg('body-bytes', 0),
  skip: numberArg('skip', 0, false),
  profile: args.profile,
  profileDir: args['profile-dir'],
  nodeFlags: args['node-flags'].split(' ').filter(Boolean),
};
if (config.skip >= config.duration * 1000) {
  fail(`--skip must be shorter than a slot (${config.duration * 1000} ms), got ${args.skip}`);
}
for (const flag of config.nodeFlags) {
  if (!flag.startsWith('--'))
    fail(`--node-flags: each flag must start with --, got ${JSON.stringify(flag)}`);
}
console.error(
  `undici-overhead: ${ordered.join(', ')}; ${config.rounds} rounds (+${config.warmup} warm-up) × ` +
    `${config.duration} s each, concurrency ${config.concurrency}, ` +
    (config.processes === 1
      ? 'a process per variant'
      : `${config.processes} processes per variant`),
);
const result = await runRounds(config).catch((error) => fail(error.stack ?? error));
const info = result.info[ordered[0]];
if (args.json) {
  console.log(JSON.stringify({ config, ...result }, null, 2));
} else {
  printTable(result, result.variants, result.baselines, goals);
  console.log(
    `ratio = variant/baseline requests/s within a round, median over ${config.rounds} rounds ` +
      (config.processes > 1
        ? `(a variant's requests/s in a round: the mean of its ${config.processes} processes'; ` +
          "processes: each one's median over the rounds, against the baseline's) "
        : '') +
      '(CPU ratio: baseline/variant client CPU time per request, the same way); ' +
      `${config.concurrency} in flight; the server counted ${result.requests} requests ` +
      `on ${result.connections} connections.` +
      (config.skip > 0
        ? ` <variant>.late: the same slots from the first response ${config.skip} ms in.`
        : ''),
  );
  console.log(
    `node ${info.node} (bundled undici ${info.bundledUndici}), npm undici ${info.undici}; ` +
      `1-min load average ${result.load.min.toFixed(2)}–${result.load.max.toFixed(2)} during the rounds; ` +
      new Date().toISOString(),
  );
}
