/**
 * The report of the default scenario's strategies as a reader sees it:
 * rendered by headless Chromium at 1280 px wide, the DOM read back after
 * the page's script ran. It must state staunch's real defaults (the values
 * shown rebuild the library's own backoff and match its policy defaults),
 * head its columns with what they hold, and fit about a screen and a half.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderReport, runLab } from '../../src/lab/index.js';
import type { LabResult } from '../../src/lab/result.js';
import { DEFAULT_RETRY } from '../../src/options.js';
import { breakerDefaults } from '../../src/policy/breaker/breaker.js';
import { budgetDefaults } from '../../src/policy/budget/budget.js';
import { exponentialBackoff, type Jitter } from '../../src/retry/backoff.js';
import { delaysOf } from '../helpers/backoff.js';
import { chromiumOrSkip, headlessFlags } from '../helpers/chromium.js';

const dir = mkdtempSync(join(tmpdir(), 'staunch-report-page-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let result: LabResult;

beforeAll(async () => {
  // The default scenario and strategies, scaled down: the same page, with fewer requests behind it.
  result = await runLab({ requests: 3_000, capacity: 100 }, { workers: 1 });
}, 60_000);

/** Records the laid-out page's height on `<html>`, after the report's own script. */
const MEASURE =
  "<script>document.documentElement.setAttribute('data-height',String(document.documentElement.scrollHeight))</script>";

/** The page as Chromium left it after its scripts ran (`--dump-dom`), at 1280 px wide. */
function rendered(chromium: string, html: string): string {
  const page = join(dir, `report-${Math.random().toString(36).slice(2)}.html`);
  writeFileSync(page, html.replace('</body>', `${MEASURE}</body>`));
  const r = spawnSync(
    chromium,
    [
      ...headlessFlags(mkdtempSync(join(dir, 'profile-'))),
      '--hide-scrollbars',
      '--window-size=1280,900',
      '--dump-dom',
      pathToFileURL(page).href,
    ],
    { encoding: 'utf8', timeout: 60_000, maxBuffer: 64 * 1024 * 1024 },
  );
  expect(r.status, r.stderr).toBe(0);
  expect(r.stdout).toContain('data-rendered="true"');
  return r.stdout;
}

/** A number of ms from `12 ms` or `1.5 s`. */
const msOf = (value: string, unit: string): number => Number(value) * (unit === 's' ? 1000 : 1);

describe('the report page in headless Chromium, 1280 px wide', () => {
  it("states staunch's defaults as the library resolves them", (ctx) => {
    const chromium = chromiumOrSkip(ctx, "the report's defaults were NOT checked");
    if (chromium === undefined) return;
    const dom = rendered(chromium, renderReport(result));
    const shown = Object.fromEntries(
      [...dom.matchAll(/<li data-default="(\w+)">([^<]*)<\/li>/g)].map((m) => [m[1]!, m[2]!]),
    );
    expect(Object.keys(shown).sort()).toEqual(['backoff', 'breaker', 'budget', 'rateLimit']);
    // The backoff as shown (`decorrelated jitter: U(250 ms, 3 × previous), cap 20 s`) rebuilds
    // the library's default: the same delays for the same draws.
    const m =
      /^(none|full|equal|decorrelated) jitter: [^,]*?([\d.]+) (ms|s)\b.*, cap ([\d.]+) (ms|s)$/.exec(
        shown.backoff!.replace('exponential, no jitter', 'none jitter'),
      );
    expect(m, shown.backoff).not.toBeNull();
    const [, jitter, base, baseUnit, cap, capUnit] = m!;
    const rebuilt = exponentialBackoff({
      jitter: jitter as Jitter,
      base: msOf(base!, baseUnit!),
      cap: msOf(cap!, capUnit!),
    });
    for (const seed of [1, 2])
      expect(delaysOf(rebuilt, seed)).toEqual(delaysOf(DEFAULT_RETRY.backoff, seed));
    expect(shown.budget).toContain(
      `${budgetDefaults.ratio * 100} % of first attempts + ${budgetDefaults.minPerSecond}/s`,
    );
    expect(shown.breaker).toContain(
      `${breakerDefaults.failureRatio * 100} % failures over ${breakerDefaults.window / 1000} s`,
    );
    expect(shown.rateLimit).toBe('rate limiter: adaptive');
  }, 90_000);

  it('heads the failure reasons in words and shows recovery only with an outage', (ctx) => {
    const chromium = chromiumOrSkip(ctx, "the report's headings were NOT checked");
    if (chromium === undefined) return;
    const dom = rendered(chromium, renderReport(result));
    const results = /<table class="num" id="results">[\s\S]*?<\/table>/.exec(dom)![0];
    const heads = [...results.matchAll(/<th>([^<]*)<\/th>/g)].map((h) => h[1]);
    expect(heads).toEqual([
      'strategy',
      'success',
      'vs optimum',
      'p50',
      'p99',
      'goodput/s',
      'attempts/req',
      '429s',
    ]);
    const failures = /<table class="num" id="failures">[\s\S]*?<\/table>/.exec(dom)![0];
    const reasons = [...failures.matchAll(/<th data-reason="([^"]*)"[^>]*>([^<]*)<\/th>/g)];
    expect(reasons.length).toBeGreaterThan(0);
    // The plain loops stop when their attempts are used up: that column says so.
    expect(reasons.find((r) => r[1] === 'attempts')?.[2]).toBe('attempts used up');
    for (const [, reason, heading] of reasons) expect(heading).not.toBe(reason);
  }, 90_000);

  it('fits a screen and a half: at most 1,600 px tall', (ctx) => {
    const chromium = chromiumOrSkip(ctx, "the report's height was NOT checked");
    if (chromium === undefined) return;
    expect(result.strategies).toHaveLength(5);
    const dom = rendered(
      chromium,
      renderReport(result, { command: 'staunch lab', version: '9.9.9' }),
    );
    const height = Number(/<html[^>]* data-height="(\d+)"/.exec(dom)?.[1]);
    expect(height).toBeGreaterThan(800);
    expect(height).toBeLessThanOrEqual(1_600);
  }, 90_000);
});
