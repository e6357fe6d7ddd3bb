/**
 * `staunch lab`: flags → `LabOptions`, runs the lab, prints the table (or
 * `--json`), writes `--report`. Bad input: one line naming the flag and what
 * it accepts, exit code 2, no stack.
 */
import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { checkRedis } from '../lab/fleet/runner.js';
import { matrixJson, matrixMarkdown, renderMatrix, runMatrix } from '../lab/matrix.js';
import {
  describeDefault,
  LAB_OPTIONS,
  type LabOptionKind,
  type LabOptions,
  resolveLabOptions,
  SCENARIOS,
} from '../lab/options.js';
import { renderTable, toJson, wrap } from '../lab/report/format.js';
import { renderReport } from '../lab/report/html.js';
import { runLab } from '../lab/run.js';
import { SCENARIO_SUMMARY } from '../lab/scenarios.js';
import type { Outage } from '../lab/server-model.js';
import { DEFAULT_WORKERS } from '../lab/sim/pool.js';
import { commandLine, version } from './about.js';

/** Where the command writes. */
export interface CliIo {
  out: (text: string) => void;
  err: (text: string) => void;
  /** Whether `err` is a terminal (progress is shown, redrawn in place; never otherwise). */
  errIsTty: boolean;
  /** The terminal's width, when known (progress lines are cut to it). @default 100 */
  columns?: number | undefined;
}

/** A usage error: printed as one line, exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

type Kind = 'number' | 'integer' | 'string' | 'list' | 'outage' | 'flag';
interface Flag {
  flag: string;
  option?: keyof LabOptions | 'workers';
  kind: Kind;
  value?: string | undefined;
  help: string;
  def: string;
}

/** How the command line reads each kind of lab option. */
const KIND: Readonly<Record<LabOptionKind, Kind>> = {
  number: 'number',
  integer: 'integer',
  choice: 'string',
  store: 'string',
  list: 'list',
  outages: 'outage',
  boolean: 'flag',
};

/** `serviceTime` → `service-time`. */
const kebab = (name: string): string => name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

/**
 * The flags: one per lab option, derived from its declaration (`LAB_OPTIONS`,
 * src/lab/options.ts: name, kind, help, default), then the command's own.
 */
const FLAGS: Flag[] = [
  ...(Object.keys(LAB_OPTIONS) as (keyof LabOptions)[]).map((option) => {
    const spec = LAB_OPTIONS[option];
    return {
      flag: spec.flag ?? kebab(option),
      option,
      kind: KIND[spec.kind],
      value: spec.value,
      help: spec.help,
      def: describeDefault(option),
    };
  }),
  {
    flag: 'workers',
    option: 'workers',
    kind: 'integer',
    value: 'N',
    help: 'sim: strategies simulated at once (threads)',
    def: String(DEFAULT_WORKERS),
  },
  {
    flag: 'matrix',
    kind: 'flag',
    help: 'run every scenario with its defaults for the mode; verdict for staunch',
    def: 'off',
  },
  {
    flag: 'markdown',
    kind: 'flag',
    help: 'with --matrix: print the matrix as Markdown tables',
    def: 'off',
  },
  { flag: 'json', kind: 'flag', help: 'print one JSON object instead of the table', def: 'off' },
  {
    flag: 'report',
    kind: 'string',
    value: 'FILE',
    help: 'write a self-contained HTML report',
    def: 'none',
  },
  { flag: 'help', kind: 'flag', help: 'this help', def: '' },
];

/** The help text of `staunch lab`. */
export function labHelp(): string {
  const left = FLAGS.map((f) => `  --${f.flag}${f.value ? ` ${f.value}` : ''}`);
  const width = Math.max(...left.map((l) => l.length)) + 2;
  // Each flag's text wrapped to 100 columns, continued under itself.
  const lines = FLAGS.flatMap((f, i) => {
    const text = `${f.help}${f.def ? ` [default: ${f.def}]` : ''}`;
    return wrap(text, 100 - width).map((l, k) => `${(k === 0 ? left[i]! : '').padEnd(width)}${l}`);
  });
  const presets = SCENARIOS.map((name) => {
    const s = resolveLabOptions({ scenario: name });
    const l = resolveLabOptions({ scenario: name, mode: 'live' });
    const size = (c: typeof s) =>
      c.arrivals === 'closed'
        ? `${c.concurrency} client${c.concurrency > 1 ? 's' : ''}`
        : `${c.requests} requests`;
    return `  ${name.padEnd(18)} ${SCENARIO_SUMMARY[name]}\n  ${''.padEnd(18)} sim: ${size(s)}, capacity ${s.server.capacity}/s; live: ${size(l)}, capacity ${l.server.capacity}/s`;
  });
  return [
    'Usage: staunch lab [options]',
    '       staunch lab --matrix [--mode sim|live] [--json | --markdown]',
    '',
    'What each retry strategy does to an upstream of limited capacity, against the optimum.',
    'Durations in ms, rates per second.',
    '',
    ...lines,
    '',
    'Scenario defaults:',
    ...presets,
    '',
    'Modes: sim is deterministic for a seed; live runs a real node:http server in a child',
    'process on 127.0.0.1 (bounded in time and requests) and real sockets.',
    'Fleet (--mode live --fleet P [--store redis://…]): P child processes run the staunch',
    'strategy (the one with policy state to share) against one upstream, once with local state',
    'in each process and, with a Redis store, once with the state shared through it.',
    'Exit codes: 0 done, 1 failed, 2 bad usage.',
  ].join('\n');
}

const NUMBER = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?$/i;

function flagOf(option: string): string {
  return FLAGS.find((f) => f.option === option)?.flag ?? option;
}

function parseNumber(f: Flag, raw: string): number {
  if (!NUMBER.test(raw.trim())) {
    const what = f.kind === 'integer' ? 'an integer' : 'a number';
    throw new UsageError(`--${f.flag} must be ${what}, got ${JSON.stringify(raw)}`);
  }
  return Number(raw);
}

function parseOutages(raws: string[]): Outage[] {
  if (raws.length === 1 && raws[0] === 'none') return [];
  return raws.map((raw) => {
    const m = /^(\d+(?:\.\d+)?)-(\d+(?:\.\d+)?)$/.exec(raw.trim());
    if (m === null || Number(m[2]) <= Number(m[1])) {
      throw new UsageError(
        `--outage must be FROM-TO in ms with FROM < TO (e.g. 10000-25000) or none, got ${JSON.stringify(raw)}`,
      );
    }
    return { start: Number(m[1]), end: Number(m[2]) };
  });
}

/** Turns argv (after `lab`) into options, or throws a UsageError. */
export function parseLabArgs(argv: string[]): {
  options: LabOptions;
  workers: number;
  json: boolean;
  report: string | undefined;
  help: boolean;
  matrix: boolean;
  markdown: boolean;
} {
  const spec: Record<string, { type: 'string' | 'boolean'; multiple?: boolean; short?: string }> =
    {};
  for (const f of FLAGS) {
    spec[f.flag] = { type: f.kind === 'flag' ? 'boolean' : 'string' };
    if (f.kind === 'outage') spec[f.flag]!.multiple = true;
  }
  spec.help!.short = 'h';
  // `--capacity -5`: a negative number is the flag's value (to be refused as such), not a flag.
  const args: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const name = argv[i]!.startsWith('--') ? argv[i]!.slice(2) : '';
    const next = argv[i + 1];
    if (spec[name]?.type === 'string' && next !== undefined && /^-[\d.]/.test(next)) {
      args.push(`--${name}=${next}`);
      i++;
    } else args.push(argv[i]!);
  }
  let values: Record<string, string | boolean | (string | boolean)[] | undefined>;
  try {
    ({ values } = parseArgs({ args, options: spec, strict: true, allowPositionals: false }));
  } catch (error) {
    const message = (error as Error).message.split('\n')[0]!.replace(/\.$/, '');
    throw new UsageError(`${message} (see staunch lab --help)`);
  }
  const options: Record<string, unknown> = {};
  let workers = DEFAULT_WORKERS;
  for (const f of FLAGS) {
    const raw = values[f.flag];
    if (raw === undefined || f.option === undefined) continue;
    let value: unknown;
    if (f.kind === 'number' || f.kind === 'integer') value = parseNumber(f, raw as string);
    else if (f.kind === 'list') value = (raw as string).split(',').map((s) => s.trim());
    else if (f.kind === 'outage') value = parseOutages(raw as string[]);
    else value = raw;
    if (f.option === 'workers') {
      if (!Number.isInteger(value) || (value as number) < 1 || (value as number) > 64) {
        throw new UsageError(`--workers must be an integer >= 1 and <= 64, got ${String(raw)}`);
      }
      workers = value as number;
    } else options[f.option] = value;
  }
  const report = values.report as string | undefined;
  if (report !== undefined && report.trim() === '') {
    throw new UsageError('--report must be a file name, got ""');
  }
  const matrix = values.matrix === true;
  const markdown = values.markdown === true;
  if (markdown && !matrix) throw new UsageError('--markdown goes with --matrix');
  if (matrix) {
    // The matrix runs each scenario with its own defaults: only the mode and the seed may be chosen.
    const other = Object.keys(options).filter((k) => k !== 'mode' && k !== 'seed');
    if (other.length > 0 || report !== undefined) {
      const name = other.length > 0 ? `--${flagOf(other[0]!)}` : '--report';
      throw new UsageError(
        `${name} cannot go with --matrix (it runs every scenario's defaults; --mode and --seed may be set)`,
      );
    }
    if (markdown && values.json === true)
      throw new UsageError('--markdown and --json exclude each other');
  }
  return {
    options: options as LabOptions,
    workers,
    json: values.json === true,
    report,
    help: values.help === true,
    matrix,
    markdown,
  };
}

/** Runs `staunch lab` with `argv` (the arguments after `lab`); resolves with the exit code. */
export async function labCommand(argv: string[], io: CliIo): Promise<number> {
  let parsed: ReturnType<typeof parseLabArgs>;
  try {
    parsed = parseLabArgs(argv);
    if (parsed.help) {
      io.out(`${labHelp()}\n`);
      return 0;
    }
    // Validate everything before any work starts.
    const config = resolveLabOptions(parsed.options);
    if (config.store !== 'local') {
      try {
        await checkRedis(config.store);
      } catch (error) {
        throw new UsageError(`--store: ${(error as Error).message}`);
      }
    }
  } catch (error) {
    return usage(error, io);
  }
  // The progress line only on a terminal, redrawn in place and cut to the width; off a terminal
  // only one line as each strategy (or fleet phase) is done, so a log shows where a run was.
  let transient = false;
  const width = Math.max(40, Math.min(io.columns ?? 100, 100)) - 1;
  const progress = (line: string): void => {
    if (!io.errIsTty) {
      if (/ done\b/.test(line)) io.err(`${line}\n`);
      return;
    }
    io.err(`\r\x1b[2K${line.length > width ? `${line.slice(0, width - 1)}…` : line}`);
    transient = true;
  };
  const began = performance.now();
  if (parsed.matrix) {
    const mode = parsed.options.mode ?? 'sim';
    const entries = await runMatrix(
      { mode, seed: parsed.options.seed },
      { workers: parsed.workers, progress },
    );
    if (transient) io.err('\r\x1b[2K');
    const wall = ((performance.now() - began) / 1000).toFixed(1);
    if (parsed.json) io.out(`${JSON.stringify(matrixJson(entries, toJson), null, 2)}\n`);
    else if (parsed.markdown) io.out(`${matrixMarkdown(entries)}\n`);
    else io.out(`${renderMatrix(entries)}\nwall time ${wall} s\n`);
    return 0;
  }
  const result = await runLab(parsed.options, { workers: parsed.workers, progress });
  if (transient) io.err('\r\x1b[2K');
  const wall = ((performance.now() - began) / 1000).toFixed(1);
  if (parsed.json) io.out(`${JSON.stringify(toJson(result), null, 2)}\n`);
  else io.out(`${renderTable(result)}\nwall time ${wall} s\n`);
  if (parsed.report !== undefined) {
    const command = commandLine(['staunch', 'lab', ...argv]);
    await writeFile(parsed.report, renderReport(result, { command, version: version() }));
    io.err(`report written to ${parsed.report}\n`);
  }
  return 0;
}

function usage(error: unknown, io: CliIo): number {
  if (error instanceof UsageError) {
    io.err(`staunch lab: ${error.message}\n`);
    return 2;
  }
  // A lab option's error names the option first (`serviceTime must be …`): say the flag instead.
  const named =
    error instanceof TypeError || error instanceof RangeError
      ? /^(\w+) (must be .*)$/s.exec(error.message)
      : null;
  if (named !== null && Object.hasOwn(LAB_OPTIONS, named[1]!)) {
    io.err(`staunch lab: --${flagOf(named[1]!)} ${named[2]}\n`);
    return 2;
  }
  throw error;
}
