/**
 * The lab's options: one declaration (LAB_OPTIONS) gives the keys, the
 * bounds and the CLI's flags; a wrong type is a TypeError, a wrong value a
 * RangeError, each naming the option and the value (src/internal/validate.ts).
 */
import { describe, expect, it } from 'vitest';
import { labHelp } from '../../src/cli/lab-command.js';
import {
  describeDefault,
  LAB_OPTIONS,
  type LabOptionSpec,
  type LabOptions,
  MODES,
  PRESETS,
  resolveLabOptions,
  SCENARIOS,
} from '../../src/lab/options.js';
import { sendsPacing } from '../../src/lab/scenarios.js';

const SECRET = 'hunter2-sentinel';

describe('resolveLabOptions: the error says the option and the value', () => {
  it.each([
    [{ capacity: 'lots' }, TypeError, 'capacity must be a number, got "lots"'],
    [{ capacity: Number.NaN }, TypeError, 'capacity must be a number, got NaN'],
    [{ capacity: -5 }, RangeError, 'capacity must be a number > 0, got -5'],
    [{ requests: 2.5 }, RangeError, 'requests must be an integer >= 1 and <= 10000000, got 2.5'],
    [{ seed: '7' }, TypeError, 'seed must be a number, got "7"'],
    [{ scenario: 7 }, TypeError, 'scenario must be one of overload, window-quota,'],
    [{ scenario: 'storm' }, RangeError, 'scenario must be one of overload,'],
    [
      { retryAfter: 'later' },
      RangeError,
      'retryAfter must be one of none, seconds, ms, got "later"',
    ],
    [{ quota: null }, TypeError, 'quota must be one of token-bucket, fixed-window, got null'],
    [{ strategies: 'fixed' }, TypeError, 'strategies must be a non-empty list of fixed,'],
    [{ strategies: [] }, RangeError, 'strategies must be a non-empty list of fixed,'],
    [{ strategies: [3] }, TypeError, 'strategies must be one of fixed,'],
    [{ strategies: ['yolo'] }, RangeError, 'got "yolo"'],
    [{ sharedStore: 'yes' }, TypeError, 'sharedStore must be true or false, got "yes"'],
    [{ outages: { start: 1, end: 2 } }, TypeError, 'outages must be a list of { start, end }'],
    [{ outages: [{ start: '1', end: 2 }] }, TypeError, 'outages must be a list of'],
    [{ outages: [{ start: 5, end: 1 }] }, RangeError, 'outages must be a list of'],
    [{ store: 6379 }, TypeError, 'store must be local or a redis:// or rediss:// URL, got 6379'],
    [{ mode: 'live', store: `mysql://u:${SECRET}@db` }, RangeError, 'got "mysql://***@db"'],
    [
      { fleet: 4 },
      RangeError,
      'fleet must be 1 unless mode is live (fleet runs are live only), got 4',
    ],
    [{ fleet: 33, mode: 'live' }, RangeError, 'fleet must be an integer >= 1 and <= 32, got 33'],
    [
      { frobnicate: 1 },
      TypeError,
      'lab options.frobnicate is not an option (expected one of: scenario,',
    ],
  ] as const)('%j → %o', (options, kind, message) => {
    let thrown: unknown;
    try {
      resolveLabOptions(options as unknown as LabOptions);
    } catch (error) {
      thrown = error;
    }
    // The plain built-in class, as everywhere in staunch: no subclass to import.
    expect((thrown as Error).constructor).toBe(kind);
    expect((thrown as Error).message).toContain(message);
    expect((thrown as Error).message).not.toContain(SECRET);
  });

  it('refuses options that are not an object with a TypeError', () => {
    expect(() => resolveLabOptions(null as unknown as LabOptions)).toThrow(TypeError);
    expect(() => resolveLabOptions([] as unknown as LabOptions)).toThrow(
      'lab options must be an object, got an array',
    );
  });
});

describe('LAB_OPTIONS: one declaration for the API and the CLI', () => {
  it('every option has a flag in staunch lab --help, with its default from the presets', () => {
    const help = labHelp().replace(/\n {20,}/g, ' ');
    for (const [key, spec] of Object.entries(LAB_OPTIONS)) {
      const flag = spec.flag ?? key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
      const def = describeDefault(key as keyof LabOptions);
      expect(help, key).toContain(`--${flag}${spec.value ? ` ${spec.value}` : ''} `);
      expect(help, key).toContain(`[default: ${def}]`);
    }
  });

  it("--help shows each spec's default: its constant, overload's preset or its words", () => {
    const help = labHelp().replace(/\n {20,}/g, ' ');
    const overload = PRESETS.sim.overload;
    for (const [key, s] of Object.entries(LAB_OPTIONS)) {
      const spec = s as LabOptionSpec;
      const flag = spec.flag ?? key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
      const line = new RegExp(`--${flag}\\b[^\\n]*\\[default: ([^\\]]*)\\]`).exec(help)?.[1];
      const value = spec.preset?.(overload) ?? spec.default;
      const shown =
        value === undefined
          ? spec.derive!.words
          : typeof value === 'boolean'
            ? value
              ? 'on'
              : 'off'
            : Array.isArray(value)
              ? value.length === 0
                ? 'none'
                : value.map((w: { start: number; end: number }) => `${w.start}-${w.end}`).join(' ')
              : String(value);
      expect(line, key).toContain(shown);
    }
  });

  it('resolveLabOptions takes every default from the spec, in every scenario and mode', () => {
    const server = new Set(['capacity', 'burst', 'serviceTime', 'queue', 'retryAfter']);
    for (const k of ['rejectCost', 'failureRate', 'outages', 'quota', 'window', 'sporadic']) {
      server.add(k);
    }
    server.add('sporadicRate');
    for (const k of ['tailRate', 'tailFactor', 'cores']) server.add(k);
    let checked = 0;
    for (const mode of MODES) {
      for (const scenario of SCENARIOS) {
        const config = resolveLabOptions({ scenario, mode });
        const p = PRESETS[mode][scenario];
        const from = {
          capacity: config.server.capacity,
          paced: sendsPacing(config.server),
          hedging: p.hedging,
          serviceTime: config.server.serviceTime,
        };
        for (const [key, s] of Object.entries(LAB_OPTIONS)) {
          // Given here; their defaults are checked below.
          if (key === 'scenario' || key === 'mode') continue;
          const spec = s as LabOptionSpec;
          const expected = spec.preset?.(p) ?? spec.derive?.of(from) ?? spec.default;
          const got = server.has(key)
            ? (config.server as unknown as Record<string, unknown>)[key]
            : (config as unknown as Record<string, unknown>)[key];
          // clients: never more than the requests.
          const want = key === 'clients' ? Math.min(expected as number, config.requests) : expected;
          expect(got, `${mode} ${scenario} ${key}`).toEqual(want);
          checked++;
        }
      }
    }
    expect(checked).toBe(MODES.length * SCENARIOS.length * (Object.keys(LAB_OPTIONS).length - 2));
    const plain = resolveLabOptions({});
    expect([plain.scenario, plain.mode]).toEqual([
      LAB_OPTIONS.scenario.default,
      LAB_OPTIONS.mode.default,
    ]);
  });

  it('derives a default from the scenarios: the overload value, then those that differ', () => {
    expect(describeDefault('failureRate')).toBe('0 (flaky: 0.05)');
    expect(describeDefault('sharedStore')).toBe('off (fleet: on)');
    expect(describeDefault('attempts')).toBe('6');
    expect(describeDefault('requests')).toBe(
      'per scenario and mode (overload: 50000 sim, 2000 live)',
    );
    expect(describeDefault('burst')).toMatch(/^capacity \/ 10 \(.*quota-4s: 5\)$/);
    expect(describeDefault('store')).toBe('local');
  });

  it('the bounds it declares are the ones resolveLabOptions enforces', () => {
    for (const [key, spec] of Object.entries(LAB_OPTIONS)) {
      const max = spec.rule?.max;
      if (max === undefined) continue;
      expect(() => resolveLabOptions({ mode: 'live', [key]: max + 1 }), key).toThrow(RangeError);
    }
  });
});
