/**
 * Tests that need the built package: the `staunch` bin as a process, live
 * mode, and the report opened in headless Chromium. (The live-against-sim
 * agreement runs alone, after the suite: agreement.alone.test.ts.)
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BuiltLab, buildLab } from '../helpers/built-lab.js';
import { chromiumOrSkip, headlessFlags } from '../helpers/chromium.js';

let built: BuiltLab;
let dir: string;
let bin: string;

beforeAll(async () => {
  built = await buildLab();
  ({ dir, bin } = built);
}, 120_000);
afterAll(() => built?.remove());

function run(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [bin, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    const timer = setTimeout(() => child.kill(), 60_000);
    child.on('error', fail);
    child.on('close', (code) => {
      clearTimeout(timer);
      done({ code, out, err });
    });
  });
}

describe('the staunch bin', () => {
  it('starts with a shebang and exits 2 with one line and no stack on bad input', async () => {
    expect(readFileSync(bin, 'utf8').split('\n')[0]).toBe('#!/usr/bin/env node');
    for (const args of [
      ['lab', '--deadline', '0'],
      ['lab', '--capacity', '-1'],
      ['lab', '--scenario', 'tsunami'],
      ['bogus'],
    ]) {
      const r = await run(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.err.trimEnd().split('\n'), r.err).toHaveLength(1);
      expect(r.err).not.toMatch(/\n\s+at |Error:/);
      expect(r.out).toBe('');
    }
  });

  it('runs a small simulation in worker threads and prints the table', async () => {
    const r = await run(['lab', '--requests', '300', '--capacity', '50', '--span', '5000']);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^staunch\s+100\.0 %/m);
    // Not a terminal: no progress line, one line per strategy done.
    expect(r.err).not.toContain('\r');
    expect(r.err).toContain('staunch done (5/5');
  });
});

describe('the report in headless Chromium', () => {
  it('renders every chart with the expected series', async (ctx) => {
    const chromium = chromiumOrSkip(ctx, 'the lab report was NOT checked in a browser');
    if (chromium === undefined) return;
    const report = join(dir, 'report.html');
    const r = await run([
      'lab',
      ...['--requests', '300', '--capacity', '50', '--span', '5000'],
      ...['--strategies', 'fixed,decorrelated,staunch', '--report', report],
    ]);
    expect(r.code).toBe(0);
    const profile = mkdtempSync(join(dir, 'chromium-'));
    const dom = spawnSync(
      chromium,
      [...headlessFlags(profile), '--dump-dom', pathToFileURL(report).href],
      { encoding: 'utf8', timeout: 60_000, maxBuffer: 64 * 1024 * 1024 },
    );
    expect(dom.status, dom.stderr).toBe(0);
    const html = dom.stdout;
    // The inline check ran in the browser: it laid out every series and marked it.
    expect(html).toContain('data-rendered="true"');
    const charts = [...html.matchAll(/<svg[^>]*data-chart="([^"]+)"[^>]*>/g)];
    const drawn = new Map(
      charts.map((m) => [m[1], Number(/data-drawn-series="(\d+)"/.exec(m[0])?.[1] ?? -1)]),
    );
    // One chart per strategy: arrivals, served, demand, capacity; goodput: 3 strategies + capacity; latency: 3 strategies + the optimum.
    expect(Object.fromEntries(drawn)).toEqual({
      goodput: 4,
      'arrivals-fixed': 4,
      'arrivals-decorrelated': 4,
      'arrivals-staunch': 4,
      latency: 4,
    });
    for (const name of ['fixed', 'decorrelated', 'staunch']) {
      expect(html).toMatch(new RegExp(`data-series="${name}"[^>]*data-drawn="true"`));
    }
    expect(html).not.toContain('data-drawn="false"');
  }, 120_000);
});
