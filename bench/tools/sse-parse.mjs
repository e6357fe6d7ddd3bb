#!/usr/bin/env node
/**
 * Throughput of staunch/sse's readEvents against a naive parser (the common
 * "buffer += text; split on '\n\n'; split each block on '\n'" async
 * generator), same run, same bytes, interleaved rounds. Both read an
 * in-memory async iterable of chunks, so the figure is the parser and its
 * iteration, not the network. LF line ends only (the naive parser cannot read
 * CR or CRLF streams at all), so both produce the same events: checked.
 *
 *   npm run build && node bench/tools/sse-parse.mjs [--mb 16] [--rounds 9]
 */
import { existsSync } from 'node:fs';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    mb: { type: 'string', default: '16' },
    rounds: { type: 'string', default: '9' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (values.help) {
  console.log('Usage: npm run build && node bench/tools/sse-parse.mjs [--mb N] [--rounds N]');
  process.exit(0);
}
const mb = Number(values.mb);
const rounds = Number(values.rounds);
if (!(mb > 0) || !Number.isInteger(rounds) || rounds < 1) {
  console.error('sse-parse: --mb must be > 0 and --rounds an integer >= 1');
  process.exit(2);
}
const dist = fileURLToPath(new URL('../../dist/sse/index.js', import.meta.url));
if (!existsSync(dist)) {
  console.error('sse-parse: run `npm run build` first (dist/sse/index.js is missing)');
  process.exit(2);
}
const { readEvents } = await import(dist);

async function* naive(source) {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of source) {
    buffer += decoder.decode(chunk, { stream: true });
    const blocks = buffer.split('\n\n');
    buffer = blocks.pop();
    for (const block of blocks) {
      let event = 'message';
      let id = '';
      const data = [];
      for (const line of block.split('\n')) {
        if (line === '' || line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon === -1 ? line : line.slice(0, colon);
        let value = colon === -1 ? '' : line.slice(colon + 1);
        if (value.startsWith(' ')) value = value.slice(1);
        if (field === 'data') data.push(value);
        else if (field === 'event') event = value;
        else if (field === 'id') id = value;
      }
      if (data.length > 0) yield { event, data: data.join('\n'), id };
    }
  }
}

const encoder = new TextEncoder();

/** `mb` MB of `event` repeated, cut into chunks of `chunk` bytes. */
function workload(event, chunk) {
  const one = encoder.encode(event);
  const copies = Math.ceil((mb * 1e6) / one.length);
  const all = new Uint8Array(copies * one.length);
  for (let i = 0; i < copies; i++) all.set(one, i * one.length);
  const chunks = [];
  for (let at = 0; at < all.length; at += chunk) chunks.push(all.subarray(at, at + chunk));
  return { chunks, bytes: all.length, events: copies };
}

const token =
  'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" token"}}\n\n';
const workloads = [
  ['LLM tokens (116 B events, 1 KiB chunks)', workload(token, 1024)],
  ['LLM tokens (116 B events, 16 KiB chunks)', workload(token, 16_384)],
  [
    'multi-line data (5 lines, 1 KiB chunks)',
    workload(`id: 7\n${'data: 0123456789abcdef\n'.repeat(5)}\n`, 1024),
  ],
  ['large events (64 KiB data, 4 KiB chunks)', workload(`data: ${'x'.repeat(65_536)}\n\n`, 4096)],
];

async function* iterate(chunks) {
  for (const c of chunks) yield c;
}

async function run(parse, w) {
  const start = performance.now();
  let n = 0;
  for await (const _ of parse(iterate(w.chunks))) n++;
  const ms = performance.now() - start;
  if (n !== w.events) throw new Error(`expected ${w.events} events, got ${n}`);
  return w.bytes / 1e6 / (ms / 1000);
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};

console.log(`node ${process.version}, ${mb} MB per run, ${rounds} rounds (+1 warm-up)`);
console.log(
  `load average before: ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}`,
);
console.log('| workload | readEvents MB/s | naive MB/s | ratio (median of rounds) |');
console.log('| --- | --- | --- | --- |');
for (const [name, w] of workloads) {
  const ours = [];
  const theirs = [];
  const ratios = [];
  for (let r = 0; r <= rounds; r++) {
    // Alternate the order so that drift hits both alike.
    let a;
    let b;
    if (r % 2 === 0) {
      a = await run(readEvents, w);
      b = await run(naive, w);
    } else {
      b = await run(naive, w);
      a = await run(readEvents, w);
    }
    if (r === 0) continue;
    ours.push(a);
    theirs.push(b);
    ratios.push(a / b);
  }
  console.log(
    `| ${name} | ${median(ours).toFixed(0)} | ${median(theirs).toFixed(0)} | ${median(ratios).toFixed(2)} |`,
  );
}
console.log(
  `load average after: ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}`,
);
