#!/usr/bin/env node
/**
 * The `staunch` command. `staunch lab …` runs the storm lab (see
 * `staunch lab --help` and docs/lab.md). Exit codes: 0 done, 1 failed, 2 bad usage.
 */
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type CliIo, labCommand } from './lab-command.js';

const HELP = `Usage: staunch <command> [options]

Commands:
  lab    what each retry strategy does to an upstream of limited capacity
         (staunch lab --help for its options)

Example:
  staunch lab                      # the overload burst, simulated, five strategies
  staunch lab --mode live --report lab-report.html`;

/** Runs the CLI with `argv` (without node and the script); resolves with the exit code. */
export async function main(argv: string[], io: CliIo): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
    io.out(`${HELP}\n`);
    return command === undefined ? 2 : 0;
  }
  if (command === 'lab') return labCommand(rest, io);
  io.err(
    `staunch: unknown command ${JSON.stringify(command)} (commands: lab; see staunch --help)\n`,
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
  const io: CliIo = {
    out: (text) => process.stdout.write(text),
    err: (text) => process.stderr.write(text),
    errIsTty: process.stderr.isTTY === true,
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
