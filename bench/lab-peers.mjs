#!/usr/bin/env node
/**
 * The live lab with the peers beside staunch's strategies: ky, got, axios +
 * axios-retry, undici's RetryAgent and p-retry around fetch, each with its
 * documented retry settings (bench/peers). Same flags as `staunch lab`, plus
 * `--peers LIST` (default all); the mode is always live.
 *
 *   npm run build && node bench/lab-peers.mjs [--scenario overload] [--report peers.html]
 */
import { writeFile } from 'node:fs/promises';

let lab;
let cli;
try {
  lab = await import('../dist/lab/index.js');
  cli = await import('../dist/cli/lab-command.js');
} catch {
  console.error('dist/ is missing: run `npm run build` first');
  process.exit(1);
}
const { peers } = await import('./peers/index.mjs');

const argv = process.argv.slice(2);
let chosen = peers;
const at = argv.indexOf('--peers');
if (at >= 0) {
  const names = (argv[at + 1] ?? '').split(',');
  chosen = peers.filter((p) => names.includes(p.name));
  const unknown = names.filter((n) => !peers.some((p) => p.name === n));
  if (unknown.length > 0) {
    console.error(
      `lab-peers: --peers must be a list of ${peers.map((p) => p.name).join(', ')}, got ${unknown.join(', ')}`,
    );
    process.exit(2);
  }
  argv.splice(at, 2);
}
let parsed;
try {
  parsed = cli.parseLabArgs(argv);
  if (parsed.help) {
    console.log(
      `${cli.labHelp()}\n  --peers LIST  ${peers.map((p) => p.name).join(',')} [default: all]`,
    );
    process.exit(0);
  }
  lab.resolveLabOptions({ ...parsed.options, mode: 'live' });
} catch (error) {
  console.error(`lab-peers: ${error.message}`);
  process.exit(2);
}
const began = performance.now();
const result = await lab.runLab(
  { ...parsed.options, mode: 'live' },
  { peers: chosen, progress: (line) => process.stderr.write(`${line}\n`) },
);
if (parsed.json) console.log(JSON.stringify(lab.toJson(result), null, 2));
else
  console.log(
    `${lab.renderTable(result)}\nwall time ${((performance.now() - began) / 1000).toFixed(1)} s`,
  );
if (parsed.report) {
  await writeFile(parsed.report, lab.renderReport(result));
  console.error(`report written to ${parsed.report}`);
}
