import { describe, expect, it } from 'vitest';
import { EXIT, exitCodeOf } from '../../src/cli/fetch-command.js';
import {
  formatBytes,
  formatDelay,
  formatDuration,
  renderProgress,
} from '../../src/cli/progress.js';
import {
  CircuitOpenError,
  DeadlineExceededError,
  NetworkError,
  ResumeError,
} from '../../src/index.js';

describe('the progress line', () => {
  it.each([
    [0, '0 B'],
    [999, '999 B'],
    [1536, '1.54 kB'],
    [12_345_678, '12.3 MB'],
    [160_000, '160 kB'],
  ])('formatBytes(%d) = %s', (n, text) => expect(formatBytes(n)).toBe(text));

  it.each([
    [400, '0 s'],
    [59_400, '59 s'],
    [125_000, '2 min 5 s'],
    [3_780_000, '1 h 3 min'],
  ])('formatDuration(%d) = %s', (ms, text) => expect(formatDuration(ms)).toBe(text));

  it.each([
    [494, '494 ms'],
    [685.4, '685 ms'],
    [999.6, '1.0 s'],
    [1_234, '1.2 s'],
    [12_400, '12 s'],
    [125_000, '2 min 5 s'],
  ])('formatDelay(%d) = %s', (ms, text) => expect(formatDelay(ms)).toBe(text));

  it('shows the bar, bytes, rate, ETA and retries within the width', () => {
    const line = renderProgress(
      { bytes: 2_500_000, total: 10_000_000, elapsed: 2_000, retries: 1 },
      100,
    );
    expect(line).toBe(
      `[${'#'.repeat(8)}${'.'.repeat(22)}]  25%  2.50 MB / 10.0 MB  1.25 MB/s  ETA 6 s  1 retry`,
    );
    for (const width of [40, 60, 80]) {
      expect(
        renderProgress(
          { bytes: 1, total: 10_000_000, elapsed: 1, retries: 3, note: 'retry in 2 s (503)' },
          width,
        ).length,
      ).toBeLessThanOrEqual(width);
    }
  });

  it('without a length: bytes and rate only', () => {
    expect(renderProgress({ bytes: 4_000, total: undefined, elapsed: 1_000, retries: 0 })).toBe(
      '4.00 kB  4.00 kB/s',
    );
  });
});

describe('exit codes', () => {
  it('one per kind of failure', () => {
    const context = { method: 'GET', url: 'http://x/' };
    expect(exitCodeOf(new DeadlineExceededError('late', 'total', 10, context))).toBe(EXIT.deadline);
    expect(exitCodeOf(new CircuitOpenError('open', 1000, context))).toBe(EXIT.circuitOpen);
    expect(exitCodeOf(new NetworkError('reset', true, context))).toBe(EXIT.network);
    expect(exitCodeOf(new ResumeError('cut', 10, context))).toBe(EXIT.incomplete);
    expect(exitCodeOf(new TypeError('terminated', { cause: new Error('other side closed') }))).toBe(
      EXIT.network,
    );
    expect(exitCodeOf(new Error('disk full'))).toBe(EXIT.failed);
    expect(new Set(Object.values(EXIT)).size).toBe(Object.keys(EXIT).length);
  });
});
