#!/usr/bin/env node
/**
 * The `staunch` command. `staunch lab …` runs the storm lab (see
 * `staunch lab --help` and docs/lab.md); `staunch fetch URL …` is a
 * resilient curl (docs/cli.md). Exit codes of `lab`: 0 done, 1 failed, 2 bad
 * usage; `fetch` has its own (docs/cli.md).
 */
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { version } from './about.js';
import { chainCommand } from './chain-command.js';
import { type FetchIo, fetchCommand } from './fetch-command.js';
import { labCommand } from './lab-command.js';

const HELP = `Usage: staunch <command> [options]

Commands:
  fetch  a resilient curl: safe retries, server pacing, deadlines, resumed downloads
         (staunch fetch --help for its options)
  lab    what each retry strategy does to an upstream of limited capacity
         (staunch lab --help for its options); staunch lab chain: the work a
         deadline header saves down a chain of services

Options:
  --version  print the version

Example:
  staunch fetch https://example.com/big.iso -o big.iso --deadline 10m
  staunch lab                      # the overload burst, simulated, five strategies
  staunch lab --mode live --report lab-report.html`;

/** Runs the CLI with `argv` (without node and the script); resolves with the exit code. */
export async function main(argv: string[], io: FetchIo): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
    io.out(`${HELP}\n`);
    return command === undefined ? 2 : 0;
  }
  if (command === '--version' || command === '-V') {
    io.out(`staunch ${version()}\n`);
    return 0;
  }
  if (command === 'lab' && rest[0] === 'chain') return chainCommand(rest.slice(1), io);
  if (command === 'lab') return labCommand(rest, io);
  if (command === 'fetch') return fetchCommand(rest, io, version());
  io.err(
    `staunch: unknown command ${JSON.stringify(command)} (commands: fetch, lab; see staunch --help)\n`,
  );
  return 2;
}

/** True when this module is the process's entry point (also through an npm bin symlink). */
function isEntry(): boolean {
  const script = process.argv[1];
  if (script === undefined) return false;
  try {
    return realpathSync(script) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isEntry()) {
  // `staunch fetch … | head`: a closed pipe ends the command quietly.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  });
  const io: FetchIo = {
    out: (text) => process.stdout.write(text),
    err: (text) => process.stderr.write(text),
    errIsTty: process.stderr.isTTY === true,
    write: (chunk) =>
      new Promise((resolve) => {
        if (process.stdout.write(chunk)) resolve();
        else process.stdout.once('drain', resolve);
      }),
  };
  main(process.argv.slice(2), io).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      const message = error instanceof Error ? error.message : String(error);
      process.stderr.write(`staunch: ${message.split('\n')[0]}\n`);
      process.exitCode = 1;
    },
  );
}
