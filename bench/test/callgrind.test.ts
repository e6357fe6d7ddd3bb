/**
 * bench/lib/callgrind.mjs reads callgrind files for the instruction counts and,
 * with `event`, for the cache simulation's misses. Pure parsing, on files
 * written here in callgrind's format.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readCallgrind } from '../lib/callgrind.mjs';

const dir = mkdtempSync(join(tmpdir(), 'staunch-callgrind-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * A callgrind file of two functions in node's binary: costs per line after
 * the positions, then the `sums` lines (`summary:`, `totals:`).
 */
function file(
  name: string,
  events: string,
  lines: readonly string[],
  sums: readonly string[],
): string {
  const path = join(dir, name);
  writeFileSync(
    path,
    [
      'version: 1',
      'pid: 999999999',
      'cmd: node bench/tools/profile-variant.mjs createAgent 2000 32 20000',
      'positions: instr line',
      `events: ${events}`,
      'ob=/usr/bin/node',
      'fn=v8::internal::Heap::Scavenge',
      ...lines.slice(0, 2),
      'fn=uv_run',
      ...lines.slice(2),
      ...sums,
      '',
    ].join('\n'),
  );
  return path;
}

describe('readCallgrind', () => {
  const cacheSim = file(
    'cache.out',
    'Ir I1mr D1mr',
    // The second line leaves its trailing zero costs out, as callgrind does.
    ['0x10 12 100 3 1', '0x14 12 50', '0x20 40 7 1 2'],
    ['summary: 157 4 3'],
  );

  it('reads instructions by default, and the requests of the run', () => {
    const read = readCallgrind(cacheSim, { by: 'function' });
    expect(read.total).toBe(157);
    expect(read.requests).toBe(2000);
    expect(read.costs.get('node v8::internal::Heap::Scavenge')).toBe(150);
    expect(read.costs.get('node uv_run')).toBe(7);
  });

  it('reads another event of the cache simulation, a left-out cost as 0', () => {
    const misses = readCallgrind(cacheSim, { by: 'function', event: 'I1mr' });
    expect(misses.total).toBe(4);
    expect(misses.costs.get('node v8::internal::Heap::Scavenge')).toBe(3);
    expect(misses.costs.get('node uv_run')).toBe(1);
    expect(readCallgrind(cacheSim, { by: 'function', event: 'D1mr' }).total).toBe(3);
  });

  it('says which events a file has when asked for another', () => {
    expect(() => readCallgrind(cacheSim, { event: 'DLmw' })).toThrow(
      /no event "DLmw" \(it has Ir I1mr D1mr\)/,
    );
  });

  it('checks the costs against the totals when the file has them, else the summary', () => {
    const both = file(
      'both.out',
      'Ir I1mr',
      ['0x10 12 100 3', '0x14 12 50', '0x20 40 7 1'],
      // callgrind's summary can count a few more than the totals of the cost lines.
      ['summary: 189 5', 'totals: 157 4'],
    );
    expect(readCallgrind(both, { event: 'I1mr' }).total).toBe(4);
  });

  it('fails when the costs do not add up to the summary', () => {
    const wrong = file(
      'wrong.out',
      'Ir',
      ['0x10 12 100', '0x14 12 50', '0x20 40 7'],
      ['summary: 158'],
    );
    expect(() => readCallgrind(wrong)).toThrow(/self costs sum to 157, the file says 158/);
  });
});
