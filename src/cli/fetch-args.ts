/**
 * The flags of `staunch fetch`, parsed and checked: bad input throws a
 * `UsageError` whose message names the flag and what it accepts.
 */
import { parseArgs } from 'node:util';
import { redactUrl } from '../internal/redact.js';
import { BAD_PORTS } from '../retry/classify.js';

/** Bad input: printed as one line, exit code 2. */
export class UsageError extends Error {}

/** The request and the output `staunch fetch` was asked for. */
export interface Parsed {
  url: string;
  method: string;
  headers: [string, string][];
  data: string | undefined;
  retries: number;
  deadline: number | undefined;
  attemptTimeout: number | undefined;
  idempotencyKey: string | undefined;
  output: string | undefined;
  json: boolean;
  verbose: boolean;
  help: boolean;
  version: boolean;
}

function duration(flag: string, raw: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(raw.trim());
  const value =
    m === null ? Number.NaN : Number(m[1]) * ({ ms: 1, s: 1000, m: 60_000 }[m[2] ?? 'ms'] ?? 1);
  if (!(value > 0) || value > 24 * 3_600_000) {
    throw new UsageError(
      `--${flag} must be a duration > 0 such as 500ms, 10s or 2m, got ${JSON.stringify(raw)}`,
    );
  }
  return value;
}

/** Turns argv (after `fetch`) into the request, or throws a UsageError. */
export function parseFetchArgs(argv: string[]): Parsed {
  let values: Record<string, string | boolean | string[] | undefined>;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args: negativeValues(argv),
      strict: true,
      allowPositionals: true,
      options: {
        request: { type: 'string', short: 'X' },
        header: { type: 'string', short: 'H', multiple: true },
        data: { type: 'string', short: 'd' },
        retry: { type: 'string' },
        deadline: { type: 'string' },
        'attempt-timeout': { type: 'string' },
        'idempotency-key': { type: 'string' },
        output: { type: 'string', short: 'o' },
        json: { type: 'boolean' },
        verbose: { type: 'boolean', short: 'v' },
        version: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (error) {
    throw new UsageError(
      `${(error as Error).message.split('\n')[0]!.replace(/\.$/, '')} (see staunch fetch --help)`,
    );
  }
  const help = values.help === true;
  const version = values.version === true;
  const url = positionals[0];
  if (!help && !version) {
    if (url === undefined) throw new UsageError('a URL is needed (see staunch fetch --help)');
    if (positionals.length > 1) {
      throw new UsageError(
        `one URL at a time, got ${positionals.length} (${positionals.map((p) => JSON.stringify(redactUrl(p))).join(', ')})`,
      );
    }
    let parsed: URL | undefined;
    try {
      parsed = new URL(url);
    } catch {
      // reported below
    }
    if (parsed === undefined || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) {
      throw new UsageError(
        `URL must be an absolute http:// or https:// URL, got ${JSON.stringify(redactUrl(url))}`,
      );
    }
    // fetch refuses these before sending anything: a usage error, not a network failure.
    if (parsed.port !== '' && BAD_PORTS.has(Number(parsed.port))) {
      throw new UsageError(
        `port ${parsed.port} is one fetch refuses to connect to (the Fetch standard's bad ports), got ${JSON.stringify(redactUrl(url))}`,
      );
    }
  }
  const headers: [string, string][] = [];
  for (const raw of (values.header as string[] | undefined) ?? []) {
    const at = raw.indexOf(':');
    const name = at > 0 ? raw.slice(0, at).trim() : '';
    if (!/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(name)) {
      throw new UsageError(
        `--header must be 'Name: value', got ${JSON.stringify(raw.slice(0, 40))}`,
      );
    }
    headers.push([name, raw.slice(at + 1).trim()]);
  }
  const retryRaw = values.retry as string | undefined;
  const retries = retryRaw === undefined ? 2 : Number(retryRaw);
  if (!Number.isInteger(retries) || retries < 0 || retries > 99 || retryRaw?.trim() === '') {
    throw new UsageError(
      `--retry must be an integer from 0 to 99, got ${JSON.stringify(retryRaw)}`,
    );
  }
  const data = values.data as string | undefined;
  const method = (
    (values.request as string | undefined) ?? (data === undefined ? 'GET' : 'POST')
  ).toUpperCase();
  if (!/^[A-Z]+$/.test(method))
    throw new UsageError(`--request must be a method name, got ${JSON.stringify(method)}`);
  const key = values['idempotency-key'] as string | undefined;
  if (key !== undefined && key.trim() === '')
    throw new UsageError('--idempotency-key must not be empty');
  const output = values.output as string | undefined;
  if (output !== undefined && output.trim() === '')
    throw new UsageError('--output must be a file name, got ""');
  const deadlineRaw = values.deadline as string | undefined;
  const attemptRaw = values['attempt-timeout'] as string | undefined;
  return {
    url: url ?? '',
    method,
    headers,
    data,
    retries,
    deadline: deadlineRaw === undefined ? undefined : duration('deadline', deadlineRaw),
    attemptTimeout: attemptRaw === undefined ? undefined : duration('attempt-timeout', attemptRaw),
    idempotencyKey: key,
    output,
    json: values.json === true,
    verbose: values.verbose === true,
    help,
    version,
  };
}

const VALUED =
  /^(?:-[XHdo]|--(?:request|header|data|retry|deadline|attempt-timeout|idempotency-key|output))$/;

/** `--retry -1`, `-d -x`: a value that starts with "-" is the flag's value (refused or taken as such), not a flag. */
function negativeValues(argv: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const next = argv[i + 1];
    if (VALUED.test(arg) && next?.startsWith('-') && next !== '-') {
      out.push(arg.startsWith('--') ? `${arg}=${next}` : `${arg}${next}`);
      i++;
    } else out.push(arg);
  }
  return out;
}
