/**
 * `staunch lab chain`: the deadline chain (src/lab/live/chain.ts) run
 * without, then with, the time left sent down the chain; prints B's work
 * after the client gave up in both runs and how much less there was.
 */
import { parseArgs } from 'node:util';
import { type ChainResult, runChain } from '../lab/live/chain.js';
import type { CliIo } from './lab-command.js';

const HELP = `Usage: staunch lab chain [options]

A client calls service A, A calls service B with staunch; B's work is slow
and variable, the client's deadline shorter than some of it. Measures B's
work done after the client gave up, without and with deadlineHeader and
deadlineSignal down the chain (real sockets on 127.0.0.1).

Options:
  --requests N      logical requests (default 100)
  --concurrency N   in flight at once (default 10)
  --deadline MS     the client's timeout.total (default 1000)
  --seed N          seeds B's work times (default 1)
  --json            print the two results as JSON`;

const integer = (flag: string, text: string | undefined, fallback: number): number => {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1)
    throw new RangeError(`--${flag} must be an integer >= 1, got ${text}`);
  return n;
};

/** Runs the command; resolves with the exit code (2: bad usage). */
export async function chainCommand(argv: string[], io: CliIo): Promise<number> {
  let values: Record<string, string | boolean | undefined>;
  let options: Parameters<typeof runChain>[0];
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        requests: { type: 'string' },
        concurrency: { type: 'string' },
        deadline: { type: 'string' },
        seed: { type: 'string' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
    options = {
      requests: integer('requests', values.requests as string | undefined, 100),
      concurrency: integer('concurrency', values.concurrency as string | undefined, 10),
      deadline: integer('deadline', values.deadline as string | undefined, 1_000),
      seed: integer('seed', values.seed as string | undefined, 1),
    };
  } catch (error) {
    io.err(`staunch lab chain: ${(error as Error).message} (see staunch lab chain --help)\n`);
    return 2;
  }
  if (values.help === true) {
    io.out(`${HELP}\n`);
    return 0;
  }
  const without = await runChain({ ...options, header: false });
  const withHeader = await runChain({ ...options, header: true });
  if (values.json === true) {
    io.out(`${JSON.stringify({ without, with: withHeader }, null, 2)}\n`);
    return 0;
  }
  io.out(chainTable(without, withHeader));
  return 0;
}

/** The two runs as a table, and the reduction of B's wasted work. */
export function chainTable(without: ChainResult, withHeader: ChainResult): string {
  const row = (name: string, r: ChainResult): string =>
    `| ${name} | ${r.requests} | ${r.gaveUp} | ${Math.round(r.work)} | ${Math.round(r.wasted)} | ${r.wastedRequests} |`;
  const less = without.wasted > 0 ? (1 - withHeader.wasted / without.wasted) * 100 : 0;
  return [
    '| deadline header | requests | client gave up | B work (ms) | B work after the client gave up (ms) | requests B worked on after |',
    '| --- | ---: | ---: | ---: | ---: | ---: |',
    row('without', without),
    row('with', withHeader),
    '',
    `B's work after the client gave up: ${less.toFixed(1)} % less with the header.`,
    '',
  ].join('\n');
}
