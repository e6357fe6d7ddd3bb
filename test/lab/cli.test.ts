import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/index.js';
import { closedPort } from '../helpers/server.js';

async function run(tty: boolean, argv: string[]) {
  let out = '';
  let err = '';
  const code = await main(argv, {
    out: (t) => {
      out += t;
    },
    err: (t) => {
      err += t;
    },
    errIsTty: tty,
  });
  return { code, out, err };
}
const cli = (...argv: string[]) => run(false, argv);

const dir = mkdtempSync(join(tmpdir(), 'staunch-lab-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('staunch lab: bad input', () => {
  it.each([
    [
      ['--scenario', 'storm'],
      '--scenario must be one of overload, window-quota, outage, outage-20, flapping, flaky, herd, sequential, sequential-random, quota-4s, fleet, latency-tail, slow-under-load, got "storm"',
    ],
    [
      ['--strategies', 'fixed,yolo'],
      '--strategies must be one of fixed, fixed+ra, exponential, exponential+ra, full-jitter, full-jitter+ra, decorrelated, decorrelated+ra, staunch, hedge-fixed, staunch+hedge, got "yolo"',
    ],
    [['--mode', 'turbo'], '--mode must be one of sim, live, got "turbo"'],
    [['--capacity', 'lots'], '--capacity must be a number, got "lots"'],
    [['--capacity', '-5'], '--capacity must be a number > 0, got -5'],
    [['--requests', '2.5'], '--requests must be an integer >= 1 and <= 10000000, got 2.5'],
    [['--deadline', '0'], '--deadline must be a number > 0 and <= 3600000, got 0'],
    [['--failure-rate', '1.5'], '--failure-rate must be a number >= 0 and <= 1, got 1.5'],
    [['--reject-cost', '-0.1'], '--reject-cost must be a number >= 0 and <= 1, got -0.1'],
    [['--retry-after', 'later'], '--retry-after must be one of none, seconds, ms, got "later"'],
    [['--outage', '20-10'], '--outage must be FROM-TO in ms with FROM < TO'],
    [['--peak', '0.1'], '--peak must be at least 0.833 for 50000 requests over 60000 ms'],
    [['--workers', '0'], '--workers must be an integer >= 1 and <= 64, got 0'],
    [['--frobnicate'], "Unknown option '--frobnicate'"],
    [['--capacity'], "Option '--capacity <value>' argument missing"],
    [['--fleet', '0'], '--fleet must be an integer >= 1 and <= 32, got 0'],
    [['--fleet', '33'], '--fleet must be an integer >= 1 and <= 32, got 33'],
    [['--fleet', 'two'], '--fleet must be an integer, got "two"'],
    [['--fleet', '4'], '--fleet must be 1 unless mode is live (fleet runs are live only), got 4'],
    [
      ['--store', 'redis://:hunter2@127.0.0.1:6379'],
      '--store must be local unless mode is live (fleet runs are live only), got "redis://***@127.0.0.1:6379"',
    ],
    [
      ['--mode', 'live', '--store', 'mysql://u:hunter2@db'],
      '--store must be local or a redis:// or rediss:// URL, got "mysql://***@db"',
    ],
    [
      ['--mode', 'live', '--fleet', '2', '--strategies', 'fixed,staunch'],
      '--strategies must be staunch in a fleet run (the one strategy with state to share), got "fixed,staunch"',
    ],
    [['--markdown'], '--markdown goes with --matrix'],
    [
      ['--matrix', '--requests', '5'],
      "--requests cannot go with --matrix (it runs every scenario's defaults; --mode and --seed may be set)",
    ],
    [['--matrix', '--json', '--markdown'], '--markdown and --json exclude each other'],
    [['--quota', 'leaky'], '--quota must be one of token-bucket, fixed-window, got "leaky"'],
    [['--concurrency', '-1'], '--concurrency must be an integer >= 0 and <= 10000, got -1'],
  ])('%j → one line naming the flag, exit code 2', async (argv, message) => {
    const r = await cli('lab', ...argv);
    expect(r.code).toBe(2);
    expect(r.out).toBe('');
    expect(r.err).toContain(message);
    expect(r.err.startsWith('staunch lab: ')).toBe(true);
    expect(r.err.trimEnd().split('\n')).toHaveLength(1);
    expect(r.err).not.toMatch(/\n\s+at /);
  });

  it('an unreachable --store: one redacted line, exit code 2, nothing run', async () => {
    const port = await closedPort();
    const r = await cli(
      'lab',
      ...['--mode', 'live', '--fleet', '2', '--store', `redis://:hunter2@127.0.0.1:${port}`],
    );
    expect(r).toMatchObject({ code: 2, out: '' });
    expect(r.err).toMatch(
      new RegExp(
        `^staunch lab: --store: cannot connect to redis://\\*\\*\\*@127\\.0\\.0\\.1:${port}`,
      ),
    );
    expect(r.err).not.toContain('hunter2');
    expect(r.err.trimEnd().split('\n')).toHaveLength(1);
  });

  it('rejects an unknown command, and no command at all', async () => {
    const r = await cli('storm');
    expect(r).toMatchObject({ code: 2, out: '' });
    expect(r.err).toBe(
      'staunch: unknown command "storm" (commands: fetch, lab; see staunch --help)\n',
    );
    const none = await cli();
    expect(none.code).toBe(2);
    expect(none.out).toContain('staunch lab');
  });
});

describe('staunch lab: help and output', () => {
  it('--help lists every flag with its default', async () => {
    const r = await cli('lab', '--help');
    expect(r.code).toBe(0);
    // A flag's text wraps at 100 columns, continued under itself.
    const unwrapped = r.out.replace(/\n {20,}/g, ' ');
    for (const flag of [
      'scenario',
      'mode',
      'strategies',
      'seed',
      'requests',
      'span',
      'peak',
      'capacity',
      'burst',
      'service-time',
      'rtt',
      'queue',
      'retry-after',
      'reject-cost',
      'failure-rate',
      'outage',
      'deadline',
      'attempts',
      'clients',
      'shared-store',
      'concurrency',
      'quota',
      'window',
      'sporadic',
      'sporadic-rate',
      'matrix',
      'markdown',
      'fleet',
      'store',
      'workers',
      'json',
      'report',
    ]) {
      expect(unwrapped).toMatch(new RegExp(`--${flag}\\b.*\\[default: [^\\]]+\\]`));
    }
    expect(r.out).toMatch(/^ {2}overload +a burst peaking/m);
    expect(r.out).toMatch(/sim: 50000 requests, capacity 1000\/s; live: 2000 requests/);
    for (const line of r.out.split('\n')) expect(line.length, line).toBeLessThanOrEqual(100);
    expect(unwrapped).toMatch(/--fleet P .*staunch strategy only.*\[default: 1\]/);
    expect(unwrapped).toMatch(/--store STORE .*\[default: local\]/);
  });

  it('--json prints one object with the documented shape; --report writes the page', async () => {
    const report = join(dir, 'r.html');
    const r = await cli(
      'lab',
      ...['--requests', '200', '--capacity', '40', '--span', '4000', '--seed', '3'],
      ...['--strategies', 'fixed,staunch', '--json', '--report', report, '--workers', '1'],
    );
    expect(r.code).toBe(0);
    const json = JSON.parse(r.out);
    expect(json).toMatchObject({ scenario: 'overload', mode: 'sim', seed: 3, capacity: 40 });
    expect(Object.keys(json.optimum)).toContain('success');
    expect(json.strategies.map((s: { name: string }) => s.name)).toEqual(['fixed', 'staunch']);
    for (const s of json.strategies) {
      for (const key of [
        'name',
        'success',
        'p50',
        'p99',
        'goodput',
        'attemptsPerRequest',
        'tooManyRequests',
        'herdPeak',
      ]) {
        expect(s).toHaveProperty(key);
      }
      expect(s.success).toBeGreaterThanOrEqual(0);
      expect(s.success).toBeLessThanOrEqual(1);
    }
    const html = readFileSync(report, 'utf8');
    expect(html).toContain('data-series="staunch"');
    expect(html).not.toMatch(/<script[^>]+src=|<link[^>]+href=|https?:\/\/(?!www\.w3\.org)/);
    expect(r.err).toContain(`report written to ${report}`);
  });

  it('prints the table with every strategy and the optimum', async () => {
    const r = await cli(
      'lab',
      ...['--scenario', 'flaky', '--requests', '300', '--capacity', '100', '--span', '6000'],
      '--workers',
      '1',
    );
    expect(r.code).toBe(0);
    for (const name of [
      'fixed',
      'exponential',
      'full-jitter',
      'decorrelated',
      'staunch',
      'optimum',
    ]) {
      expect(r.out).toMatch(new RegExp(`^${name}\\s`, 'm'));
    }
    expect(r.out).toContain('5.0 % random 503');
    for (const line of r.out.split('\n')) expect(line.length, line).toBeLessThanOrEqual(100);
    // Off a terminal: no progress line, one line per strategy done.
    expect(r.err).not.toContain('\r');
    expect(r.err).not.toContain('virtual time');
    expect(r.err).toMatch(/^sim flaky: staunch done \(5\/5, [\d.]+ s\)$/m);
  });

  it('shows a progress line on a terminal: strategy, share of virtual time, ETA', async () => {
    const r = await run(true, [
      'lab',
      ...['--requests', '400', '--capacity', '50', '--span', '8000', '--workers', '1'],
      ...['--strategies', 'fixed,staunch'],
    ]);
    expect(r.code).toBe(0);
    // Each redraw: carriage return, erase the line (ESC [2K), the line.
    expect(r.err).toContain('\r\u001b[2Ksim overload · ');
    expect(r.err).toMatch(
      /sim overload · (fixed|staunch) \d+ % of virtual time · finished \d\/2 · ETA/,
    );
    for (const line of r.err.split('\r')) expect(line.length).toBeLessThanOrEqual(104);
  });
});
