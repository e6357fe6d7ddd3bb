/**
 * `staunch fetch URL`: a resilient curl. One request through staunch's
 * defaults (safe retries, server pacing, deadlines, a resumable body for a
 * GET), the body to stdout or `-o FILE`. Errors are one line, no stack; exit
 * codes say what failed (docs/cli.md).
 */
import { createWriteStream } from 'node:fs';
import { readFile, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { isStaunchError } from '../errors.js';
import type { StaunchListeners } from '../events.js';
import { createFetch } from '../fetch.js';
import { redactUrl, SECRET_HEADERS } from '../internal/redact.js';
import { type Parsed, parseFetchArgs, UsageError } from './fetch-args.js';
import type { CliIo } from './lab-command.js';
import { formatDelay, renderProgress } from './progress.js';

/** Exit codes of `staunch fetch`. */
export const EXIT: Readonly<{
  ok: 0;
  failed: 1;
  usage: 2;
  http: 3;
  deadline: 4;
  circuitOpen: 5;
  network: 6;
  incomplete: 7;
}> = Object.freeze({
  ok: 0,
  failed: 1,
  usage: 2,
  http: 3,
  deadline: 4,
  circuitOpen: 5,
  network: 6,
  incomplete: 7,
} as const);

/** Where `staunch fetch` writes: the lab's text streams plus raw bytes to stdout. */
export interface FetchIo extends CliIo {
  /** Writes body bytes to stdout, resolving once they are taken (back-pressure). */
  write?: (chunk: Uint8Array) => Promise<void>;
}

export const FETCH_HELP = `Usage: staunch fetch URL [options]

A resilient curl: retries what is safe to retry, honours Retry-After, holds
its deadline, and resumes a GET whose body breaks off (Range + If-Match).

Options:
  -X, --request METHOD     method (default GET, or POST with --data)
  -H, --header 'N: V'      request header, repeatable
  -d, --data DATA          request body; @FILE reads it from FILE
  --retry N                retries after the first attempt (default 2)
  --deadline DURATION      for everything: attempts, waits and the body (default
                           5m to the response headers, then none)
  --attempt-timeout DUR.   for one attempt, to its response headers (default 60s)
  --idempotency-key KEY    sent as Idempotency-Key: makes a POST retryable
  -o, --output FILE        write the body to FILE (progress bar on a terminal)
  --json                   print a JSON summary to stdout (the body needs -o)
  -v, --verbose            show each attempt and wait as it happens (redacted)
  --version                print the version
  -h, --help               this help

Durations: 500ms, 10s, 2m (a bare number is ms).
Exit codes: 0 ok, 1 other failure, 2 bad argument, 3 HTTP error status (>= 400),
4 deadline exceeded, 5 circuit open, 6 network failure, 7 body cut off and not resumable.`;

/** The exit code for an error thrown by the request or while reading its body. */
export function exitCodeOf(error: unknown): number {
  const code = isStaunchError(error) ? error.code : undefined;
  // DeadlineExceededError, and the TimeoutError of the --deadline signal while reading the body.
  if (code === 'STAUNCH_DEADLINE' || (error as Error | null)?.name === 'TimeoutError') {
    return EXIT.deadline;
  }
  if (code === 'STAUNCH_CIRCUIT_OPEN') return EXIT.circuitOpen;
  if (code === 'STAUNCH_RESUME') return EXIT.incomplete;
  if (code === 'STAUNCH_NETWORK' || code === 'STAUNCH_SSRF_BLOCKED') return EXIT.network;
  if (error instanceof TypeError && (error as { cause?: unknown }).cause !== undefined) {
    return EXIT.network; // undici's "fetch failed" / "terminated", the socket error as cause
  }
  return EXIT.failed;
}

/** The summary `--json` prints. */
export interface FetchSummary {
  method: string;
  url: string;
  status?: number;
  attempts: number;
  retries: { attempt: number; reason: string; delay: number; status?: number; code?: string }[];
  waits: { attempt: number; reason: string; duration: number }[];
  bytes: number;
  durationMs: number;
  output?: string;
  exitCode: number;
  error?: { code?: string; message: string };
}

/** Runs `staunch fetch` with `argv` (the arguments after `fetch`); resolves with the exit code. */
export async function fetchCommand(argv: string[], io: FetchIo, version: string): Promise<number> {
  let p: Parsed;
  let body: string | Uint8Array | undefined;
  try {
    p = parseFetchArgs(argv);
    if (p.help) {
      io.out(`${FETCH_HELP}\n`);
      return EXIT.ok;
    }
    if (p.version) {
      io.out(`staunch ${version}\n`);
      return EXIT.ok;
    }
    body = await readData(p.data);
  } catch (error) {
    if (error instanceof UsageError) {
      io.err(`staunch fetch: ${error.message}\n`);
      return EXIT.usage;
    }
    throw error;
  }
  const shown = redactUrl(p.url);
  const started = performance.now();
  const summary: FetchSummary = {
    method: p.method,
    url: shown,
    attempts: 0,
    retries: [],
    waits: [],
    bytes: 0,
    durationMs: 0,
    exitCode: 0,
  };
  if (p.output !== undefined) summary.output = p.output;
  const progress =
    p.output !== undefined && io.errIsTty && !p.verbose ? new ProgressLine(io) : undefined;
  const log = (line: string): void => {
    if (p.verbose) io.err(`${line}\n`);
  };
  const on: StaunchListeners = {
    attemptStart: (e) => {
      summary.attempts++;
      if (e.attempt === 1 && summary.attempts > 1) {
        // A new logical request after the first: the body broke off and is resumed.
        log(`* resuming at byte ${summary.bytes}`);
        progress?.retry(`resuming at byte ${summary.bytes}`);
      }
      log(`> ${e.method} ${e.url} (attempt ${e.attempt})`);
      if (e.attempt === 1 && summary.attempts === 1) {
        for (const [n, v] of p.headers)
          log(`> ${n}: ${SECRET_HEADERS.has(n.toLowerCase()) ? '***' : v}`);
      }
    },
    attempt: (e) => log(`< ${e.status ?? e.code ?? 'failed'} after ${Math.round(e.duration)} ms`),
    retry: (e) => {
      summary.retries.push({
        attempt: e.attempt,
        reason: e.reason,
        delay: Math.round(e.delay),
        ...(e.status !== undefined && { status: e.status }),
        ...(e.code !== undefined && { code: e.code }),
      });
      log(
        `* retry in ${formatDelay(e.delay)} (${e.status ?? e.code ?? e.reason}, ${e.delaySource})`,
      );
      progress?.retry(`retry in ${formatDelay(e.delay)} (${e.status ?? e.code ?? e.reason})`);
    },
    wait: (e) => {
      summary.waits.push({
        attempt: e.attempt,
        reason: e.reason,
        duration: Math.round(e.duration),
      });
      log(`* waited ${Math.round(e.duration)} ms (${e.reason})`);
    },
    giveUp: (e) => log(`* gave up: ${e.reason}`),
  };
  const fetch = createFetch({
    on,
    resume: true,
    retry: { attempts: p.retries + 1 },
    timeout: {
      ...(p.deadline !== undefined && { total: p.deadline }),
      ...(p.attemptTimeout !== undefined && { attempt: p.attemptTimeout }),
    },
  });
  const headers = [...p.headers];
  if (body !== undefined && !headers.some(([n]) => n.toLowerCase() === 'content-type')) {
    headers.push(['content-type', 'application/x-www-form-urlencoded']);
  }
  let exit: number = EXIT.ok;
  let part: string | undefined;
  try {
    const response = await fetch(p.url, {
      method: p.method,
      headers,
      ...(body !== undefined && { body }),
      ...(p.idempotencyKey !== undefined && { idempotencyKey: p.idempotencyKey }),
      // The deadline bounds the body too (timeout.total stops at the response headers).
      ...(p.deadline !== undefined && { signal: AbortSignal.timeout(p.deadline) }),
    });
    summary.status = response.status;
    if (response.status >= 400) exit = EXIT.http;
    const length = Number(response.headers.get('content-length') ?? Number.NaN);
    progress?.start(Number.isFinite(length) ? length : undefined);
    const count = (n: number): void => {
      summary.bytes += n;
      progress?.update(summary.bytes);
    };
    if (p.output !== undefined) {
      part = join(dirname(p.output), `.${basename(p.output)}.staunch-part`);
      await toFile(response, part, count);
      await rename(part, p.output);
      part = undefined;
    } else if (p.json) {
      for await (const chunk of response.body ?? []) count(chunk.byteLength);
    } else {
      const write =
        io.write ?? ((c: Uint8Array) => Promise.resolve(io.out(new TextDecoder().decode(c))));
      for await (const chunk of response.body ?? []) {
        count(chunk.byteLength);
        await write(chunk);
      }
    }
    progress?.done();
    if (exit === EXIT.http) {
      io.err(
        `staunch fetch: HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ''} from ${p.method} ${shown} after ${plural(summary.attempts, 'attempt')}\n`,
      );
    }
  } catch (error) {
    progress?.done();
    if (part !== undefined) await rm(part, { force: true });
    exit = exitCodeOf(error);
    const message =
      (error as Error | null)?.name === 'TimeoutError' && !isStaunchError(error)
        ? `${p.method} ${shown}: exceeded --deadline (${p.deadline} ms)`
        : oneLine(error);
    summary.error = { message, ...(isStaunchError(error) && { code: error.code }) };
    io.err(`staunch fetch: ${message}\n`);
  }
  summary.exitCode = exit;
  summary.durationMs = Math.round(performance.now() - started);
  if (p.json) io.out(`${JSON.stringify(summary, null, 2)}\n`);
  return exit;
}

async function readData(data: string | undefined): Promise<string | Uint8Array | undefined> {
  if (data === undefined || !data.startsWith('@')) return data;
  const file = data.slice(1);
  try {
    return new Uint8Array(await readFile(file));
  } catch (error) {
    throw new UsageError(
      `--data @${file}: ${(error as NodeJS.ErrnoException).code ?? 'cannot read'}`,
    );
  }
}

async function toFile(response: Response, path: string, count: (n: number) => void): Promise<void> {
  const out = createWriteStream(path);
  const closed = new Promise<void>((resolve, reject) => {
    out.on('close', resolve);
    out.on('error', reject);
  });
  try {
    for await (const chunk of response.body ?? []) {
      count(chunk.byteLength);
      if (!out.write(chunk))
        await new Promise<void>((resolve) => out.once('drain', () => resolve()));
    }
  } finally {
    out.end();
  }
  await closed;
}

/** The error's message on one line, with the root cause's code when it adds one. */
function oneLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  let cause = (error as { cause?: unknown } | null)?.cause;
  let code: string | undefined;
  for (let depth = 0; cause !== undefined && cause !== null && depth < 5; depth++) {
    const c = (cause as { code?: unknown }).code;
    if (typeof c === 'string') code = c;
    cause = (cause as { cause?: unknown }).cause;
  }
  const line = message.split('\n')[0]!;
  return code !== undefined && !line.includes(code) ? `${line} (${code})` : line;
}

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

/** The progress line on a terminal, redrawn in place at most every 100 ms. */
class ProgressLine {
  readonly #io: FetchIo;
  #total: number | undefined;
  #bytes = 0;
  #retries = 0;
  #note: string | undefined;
  #began = performance.now();
  #drawn = 0;
  #shown = false;

  constructor(io: FetchIo) {
    this.#io = io;
  }

  start(total: number | undefined): void {
    this.#total = total;
    this.#note = undefined;
    this.#draw(true);
  }

  update(bytes: number): void {
    this.#bytes = bytes;
    this.#draw(false);
  }

  retry(note: string): void {
    this.#retries++;
    this.#note = note;
    this.#draw(true);
  }

  done(): void {
    if (this.#shown) this.#io.err('\r\x1b[2K');
    this.#shown = false;
  }

  #draw(force: boolean): void {
    const now = performance.now();
    if (!force && now - this.#drawn < 100) return;
    this.#drawn = now;
    // A pseudo-terminal may report 0 columns: take 80 then.
    const columns = (process.stderr.columns || 80) - 1;
    const line = renderProgress(
      {
        bytes: this.#bytes,
        total: this.#total,
        elapsed: now - this.#began,
        retries: this.#retries,
        note: this.#note,
      },
      columns,
    );
    this.#io.err(`\r\x1b[2K${line}`);
    this.#shown = true;
  }
}
