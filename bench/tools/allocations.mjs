#!/usr/bin/env node
/**
 * Bytes allocated a request, and by which function, for the variants of
 * bench/undici-variants.mjs: what the garbage collector is given to do. A
 * figure that, like bench/instructions.mjs's, does not move with the load on
 * the machine (it is sampled, so it moves by a few per cent between runs).
 *
 *   npm run build && node bench/tools/allocations.mjs [--help]
 *
 * Each variant runs in a process of its own against the loopback server of
 * bench/lib/child-server.mjs: a warm-up, then the measured requests under V8's
 * sampling heap profiler (the inspector's `HeapProfiler.startSampling`),
 * asked to keep the samples of objects that young and old collections freed,
 * so the profile counts every byte allocated in the window, not only what
 * survived it. A sample stands for `--interval` bytes on average, and is
 * charged to the JavaScript function that allocated it (the top frame).
 * Young-generation collections (scavenges) in the window are counted too.
 *
 * The difference to the baseline, by function, names what a variant adds:
 * its own objects, and what it makes the runtime and undici allocate.
 */
import { spawn } from 'node:child_process';
import { Session } from 'node:inspector/promises';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const HELP = `Usage: npm run build && node bench/tools/allocations.mjs [options]

Options:
  --variants <list>   comma-separated variants of bench/undici-variants.mjs
                      (default bare,createAgent,interceptor)
  --baseline <name>   the variant the others are compared with (default: the first)
  --requests <n>      measured requests a variant            (default 100000)
  --warmup <n>        requests before the measured ones      (default 20000)
  --concurrency <n>   requests in flight                     (default 32)
  --interval <n>      mean bytes between samples             (default 128)
  --top <n>           functions listed a variant             (default 15)
  --json              print the results as JSON
  -h, --help          this help`;

const { values: opts } = parseArgs({
  options: {
    variants: { type: 'string', default: 'bare,createAgent,interceptor' },
    baseline: { type: 'string' },
    requests: { type: 'string', default: '100000' },
    warmup: { type: 'string', default: '20000' },
    concurrency: { type: 'string', default: '32' },
    interval: { type: 'string', default: '128' },
    top: { type: 'string', default: '15' },
    child: { type: 'string' },
    json: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (opts.help) {
  console.log(HELP);
  process.exit(0);
}

function integer(name, min) {
  const value = Number(opts[name]);
  if (!Number.isInteger(value) || value < min) {
    throw new RangeError(
      `--${name} must be an integer >= ${min}, got ${JSON.stringify(opts[name])}`,
    );
  }
  return value;
}
const requests = integer('requests', 1);
const warmup = integer('warmup', 0);
const concurrency = integer('concurrency', 1);
const interval = integer('interval', 1);
const top = integer('top', 1);

/** `name file:line` of a profile node's function, with the install paths cut. */
function siteOf(frame) {
  const file = frame.url
    .replace(/^file:\/\//, '')
    .replace(/^.*\/node_modules\//, '')
    .replace(/^.*\/(dist|\.prof\/ab\/[^/]+)\//, 'staunch ');
  return `${frame.functionName || '(anonymous)'} ${file || '(native)'}:${frame.lineNumber + 1}`;
}

/** In the child: runs `variant` and prints `{ bytes, scavenges, sites }` a request as JSON. */
async function measure(variant) {
  const { startServer } = await import('../lib/child-server.mjs');
  const { drive, setup, teardown } = await import('../undici-variants.mjs');
  const server = await startServer({ name: 'allocations', maxSeconds: 900, bodyBytes: 64 });
  const send = await setup(variant, `http://127.0.0.1:${server.port}/bench`);
  const run = (n) => drive(send, variant, n, concurrency);
  await run(warmup);
  let scavenges = 0;
  const gc = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      if (entry.detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR) scavenges++;
    }
  });
  const session = new Session();
  session.connect();
  await session.post('HeapProfiler.startSampling', {
    samplingInterval: interval,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  gc.observe({ entryTypes: ['gc'] });
  await run(requests);
  const { profile } = await session.post('HeapProfiler.stopSampling');
  // Entries of the last collections arrive on a later turn.
  await new Promise((resolve) => setTimeout(resolve, 50));
  gc.disconnect();
  session.disconnect();
  const sites = {};
  let bytes = 0;
  const walk = (node) => {
    if (node.selfSize > 0) {
      const site = siteOf(node.callFrame);
      sites[site] = (sites[site] ?? 0) + node.selfSize / requests;
      bytes += node.selfSize;
    }
    for (const child of node.children) walk(child);
  };
  walk(profile.head);
  await teardown();
  server.stop();
  process.stdout.write(
    JSON.stringify({ bytes: bytes / requests, scavenges: (scavenges * 1000) / requests, sites }),
  );
}

/** In the parent: one child process for `variant`. */
function inChild(variant) {
  const args = [
    fileURLToPath(import.meta.url),
    '--child',
    variant,
    ...['requests', 'warmup', 'concurrency', 'interval'].flatMap((k) => [`--${k}`, opts[k]]),
  ];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
    });
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code !== 0) reject(new Error(`${variant}: exited with ${code}`));
      else resolve(JSON.parse(out));
    });
  });
}

if (opts.child !== undefined) {
  await measure(opts.child);
} else {
  const variants = opts.variants.split(',').filter(Boolean);
  if (variants.length === 0) throw new RangeError('--variants must name at least one variant');
  const baseline = opts.baseline ?? variants[0];
  if (!variants.includes(baseline)) {
    throw new RangeError(`--baseline ${JSON.stringify(baseline)} is not among --variants`);
  }
  const results = {};
  // One at a time: the loopback server and the client share the machine.
  for (const variant of variants) results[variant] = await inChild(variant);
  if (opts.json) {
    console.log(JSON.stringify({ node: process.version, baseline, results }, null, 2));
  } else {
    const base = results[baseline];
    console.log(
      `node ${process.version}; ${warmup} warm-up + ${requests} measured requests, ${concurrency} in flight, a sample every ${interval} bytes on average`,
    );
    console.log(
      '| variant | bytes a request | more than the baseline | scavenges per 1,000 requests |',
    );
    console.log('| --- | ---: | ---: | ---: |');
    for (const v of variants) {
      const r = results[v];
      const more = v === baseline ? '' : `${Math.round(r.bytes - base.bytes)}`;
      console.log(`| ${v} | ${Math.round(r.bytes)} | ${more} | ${r.scavenges.toFixed(2)} |`);
    }
    for (const v of variants) {
      if (v === baseline) continue;
      const r = results[v];
      const diff = new Map();
      for (const s of new Set([...Object.keys(r.sites), ...Object.keys(base.sites)])) {
        diff.set(s, (r.sites[s] ?? 0) - (base.sites[s] ?? 0));
      }
      const staunch = [...diff]
        .filter(([s]) => s.includes(' staunch '))
        .reduce((a, [, b]) => a + b, 0);
      console.log(
        `\n${v} − ${baseline}, bytes a request by allocating function (staunch's own: ${Math.round(staunch)})`,
      );
      const rows = [...diff].sort((a, b) => Math.abs(b[1]) - Math.abs(a[1])).slice(0, top);
      for (const [site, bytes] of rows)
        console.log(`${Math.round(bytes).toString().padStart(7)}  ${site}`);
    }
  }
}
