/**
 * The HTML report: its structure (verdict first, shared axes, legends above
 * the plot, dashed swatches, outage bands, failure table, how it was made),
 * then a screenshot in headless Chromium: the image's size, and not one
 * console message (the page logs nothing, so any message is an error).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderReport, runLab } from '../../src/lab/index.js';
import { verdict } from '../../src/lab/report/html.js';
import type { LabResult } from '../../src/lab/result.js';
import { chromiumOrSkip, headlessFlags } from '../helpers/chromium.js';

const dir = mkdtempSync(join(tmpdir(), 'staunch-report-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let outage: LabResult;
let html: string;
const date = new Date('2026-12-01T10:00:00Z');

beforeAll(async () => {
  outage = await runLab(
    {
      scenario: 'outage',
      requests: 2_000,
      capacity: 100,
      span: 20_000,
      outages: [{ start: 5_000, end: 9_000 }],
      strategies: ['fixed', 'decorrelated', 'staunch'],
    },
    { workers: 1 },
  );
  html = renderReport(outage, { command: 'staunch lab --scenario outage', version: '9.9.9', date });
}, 60_000);

/** The y tick labels of a chart, in order. */
function yTicks(page: string, id: string): string[] {
  const svg = new RegExp(`<svg[^>]*data-chart="${id}"[\\s\\S]*?</svg>`).exec(page)?.[0] ?? '';
  return [...svg.matchAll(/class="yt">([^<]*)</g)].map((m) => m[1]!);
}

describe('the report page', () => {
  it('opens with the verdict, then how it was made', () => {
    const body = html.slice(html.indexOf('<body>'));
    const order = ['<h1>', 'class="verdict"', 'Made with', '<table'].map((s) => body.indexOf(s));
    expect(order.every((at) => at > 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    expect(body).toContain(
      '<code>staunch lab --scenario outage</code> · staunch 9.9.9 · 2026-12-01T10:00:00Z',
    );
  });

  it('names the winner, the metric and the margin', () => {
    const ranked = [...outage.strategies].sort((a, b) => b.success - a.success);
    const [best, next] = ranked;
    const text = verdict(outage).replace(/<[^>]+>/g, '');
    if (best!.success - next!.success >= 0.0005) {
      expect(text).toContain(`${best!.name} wins on success within the 60 s deadline`);
      expect(text).toContain(
        `${(best!.success * 100).toFixed(1)} % of requests against ${(next!.success * 100).toFixed(1)} %`,
      );
      expect(text).toContain(`(+${((best!.success - next!.success) * 100).toFixed(1)} points)`);
    } else {
      expect(text).toMatch(/tie on success/);
    }
  });

  it('decides a tie on success by the load, and says so', () => {
    const [a, b] = outage.strategies;
    const tie: LabResult = {
      ...outage,
      strategies: [
        { ...a!, name: 'heavy', success: 0.9, attemptsPerRequest: 3 },
        { ...b!, name: 'light', success: 0.9, attemptsPerRequest: 1.5 },
      ],
    };
    expect(verdict(tie).replace(/<[^>]+>/g, '')).toContain(
      'light and heavy tie on success within the 60 s deadline (90.0 %); light wins on load: 1.50 attempts per request against 3.00 (2.00× fewer)',
    );
  });

  it('draws the small multiples on one shared y scale that holds the demand peak', () => {
    const ticks = outage.strategies.map((s) => yTicks(html, `arrivals-${s.name}`));
    for (const t of ticks) expect(t).toEqual(ticks[0]);
    // The top tick is at or above every series' peak per second, demand included.
    const top = ticks[0]!.at(-1)!;
    const value = top.endsWith('k') ? Number(top.slice(0, -1)) * 1000 : Number(top);
    const peak = Math.max(
      ...outage.strategies.flatMap((s) =>
        [...s.series.issued, ...s.series.arrivals].map((v) => (v * 1000) / s.series.bin),
      ),
    );
    expect(value * 1.25).toBeGreaterThanOrEqual(peak);
  });

  it('puts legends above the plot and draws dashed series dashed in them', () => {
    const svg = /<svg[^>]*data-chart="goodput"[\s\S]*?<\/svg>/.exec(html)![0];
    const legendYs = [...svg.matchAll(/<text x="[\d.]+" y="([\d.]+)" class="lg">/g)].map((m) =>
      Number(m[1]),
    );
    const gridYs = [
      ...svg.matchAll(/<line x1="[\d.]+" x2="[\d.]+" y1="([\d.]+)" y2="\1" class="g"\/>/g),
    ].map((m) => Number(m[1]));
    expect(legendYs.length).toBeGreaterThan(0);
    expect(Math.max(...legendYs) + 8).toBeLessThan(Math.min(...gridYs));
    expect(svg).toMatch(
      /<line [^>]*stroke="#000" stroke-width="2" stroke-dasharray="5 3"\/><text [^>]*class="lg">capacity \(100\/s\)</,
    );
    expect(svg).toMatch(
      /<rect [^>]*fill="#888" fill-opacity="0.16"\/><text [^>]*class="lg">outage \(503\)</,
    );
  });

  it('shades the outage on every time chart, goodput of every strategy on one chart', () => {
    for (const id of ['goodput', ...outage.strategies.map((s) => `arrivals-${s.name}`)]) {
      const svg = new RegExp(`<svg[^>]*data-chart="${id}"[\\s\\S]*?</svg>`).exec(html)![0];
      expect(svg, id).toContain('class="band"');
    }
    const goodput = /<svg[^>]*data-chart="goodput"[\s\S]*?<\/svg>/.exec(html)![0];
    for (const s of outage.strategies) expect(goodput).toContain(`data-series="${s.name}"`);
  });

  it('lists failure reasons as a table, not JSON', () => {
    const section = html.slice(html.indexOf('Why requests failed'));
    const reasons = [...new Set(outage.strategies.flatMap((s) => Object.keys(s.outcomes)))];
    expect(reasons.length).toBeGreaterThan(0);
    for (const r of reasons) expect(section).toContain(`data-reason="${r}"`);
    expect(html).not.toContain('{&quot;');
  });

  it('shows recovery, and says what it is, only when the scenario has an outage', () => {
    const results = /<table class="num" id="results">[\s\S]*?<\/table>/.exec(html)![0];
    expect(results).toContain('<th>recovery</th>');
    expect(html).toContain('Recovery: from the end of the last outage');
    const calm = renderReport({
      ...outage,
      config: { ...outage.config, server: { ...outage.config.server, outages: [] } },
    });
    expect(calm).not.toContain('<th>recovery</th>');
    expect(calm).not.toContain('Recovery:');
  });
});

describe('the report in headless Chromium', () => {
  it('screenshots at the window size with no console message', (ctx) => {
    const chromium = chromiumOrSkip(ctx, 'the report was NOT screenshot');
    if (chromium === undefined) return;
    const page = join(dir, 'report.html');
    const png = join(dir, 'report.png');
    writeFileSync(page, html);
    const r = spawnSync(
      chromium,
      [
        ...headlessFlags(mkdtempSync(join(dir, 'profile-'))),
        '--hide-scrollbars',
        '--enable-logging=stderr',
        '--v=0',
        '--window-size=1100,2400',
        `--screenshot=${png}`,
        pathToFileURL(page).href,
      ],
      { encoding: 'utf8', timeout: 60_000 },
    );
    expect(r.status, r.stderr).toBe(0);
    // Console messages (console.* and uncaught errors) are logged as CONSOLE lines.
    expect(r.stderr.split('\n').filter((l) => l.includes(':CONSOLE'))).toEqual([]);
    const image = readFileSync(png);
    expect(image.subarray(1, 4).toString()).toBe('PNG');
    expect([image.readUInt32BE(16), image.readUInt32BE(20)]).toEqual([1100, 2400]);
    // A blank or unstyled page compresses to a few kB; the charts do not.
    expect(statSync(png).size).toBeGreaterThan(100_000);
  }, 90_000);
});
