/**
 * The reference pages against the types they document, read with the
 * TypeScript compiler. docs/fetch.md: every option of `createFetch` (and
 * every field of each `…Options` object it takes) has a row, every listener
 * of `on` has a row, and that row names every field of its event. The other
 * entries' pages name every option of their options types in code. A new
 * option or event that is not documented fails here, not in a user's editor.
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, test } from 'vitest';
import { strategyConfig } from '../../src/lab/strategies.js';
import { DEFAULT_RETRY } from '../../src/options.js';

const root = resolve(import.meta.dirname, '../..');
const page = readFileSync(join(root, 'docs/fetch.md'), 'utf8');

/** Other entries' options types, and the page that documents them. */
const ENTRY_OPTIONS: readonly (readonly [file: string, type: string, page: string])[] = [
  ['redis/store.ts', 'RedisStoreOptions', 'docs/fleet.md'],
  ['redis/connect.ts', 'ConnectRedisStoreOptions', 'docs/fleet.md'],
  ['otel/instrument.ts', 'InstrumentOptions', 'docs/otel.md'],
  ['llm/llm.ts', 'LlmOptions', 'docs/llm.md'],
  ['sse/read.ts', 'ReadEventsOptions', 'docs/sse.md'],
  ['sse/first-event.ts', 'FirstEventOptions', 'docs/sse.md'],
  ['sse/resume.ts', 'ResumableEventsOptions', 'docs/sse.md'],
  ['sse/relay.ts', 'ToEventStreamOptions', 'docs/sse.md'],
  ['sse/node.ts', 'PipeEventsOptions', 'docs/sse.md'],
  ['store/memory.ts', 'MemoryStoreOptions', 'docs/store.md'],
  ['deadline/signal.ts', 'DeadlineSignalOptions', 'docs/deadlines.md'],
];

const files = ['fetch.ts', ...ENTRY_OPTIONS.map(([file]) => file)];
const program = ts.createProgram(
  files.map((file) => join(root, 'src', file)),
  {
    strict: true,
    exactOptionalPropertyTypes: true,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    types: ['node'],
    lib: ['lib.es2023.d.ts', 'lib.dom.d.ts'],
    noEmit: true,
  },
);
const checker = program.getTypeChecker();

/** The declared type of an exported interface of a src/ file. */
function exported(file: string, name: string): ts.Type {
  const source = program.getSourceFile(join(root, 'src', file));
  if (source === undefined) throw new Error(`src/${file} is not in the program`);
  const module = checker.getSymbolAtLocation(source);
  const symbol = module && checker.getExportsOfModule(module).find((s) => s.name === name);
  if (symbol === undefined) throw new Error(`src/${file} exports no ${name}`);
  return checker.getDeclaredTypeOfSymbol(symbol);
}

/** The type of a property, `undefined` dropped. */
const typeOf = (property: ts.Symbol): ts.Type =>
  checker.getNonNullableType(checker.getTypeOfSymbol(property));

/** The members of a union (or the type itself). */
const members = (type: ts.Type): ts.Type[] => (type.isUnion() ? type.types : [type]);

/** The name of a type's interface or alias (`RetryOptions`), or ''. */
const nameOf = (type: ts.Type): string => (type.aliasSymbol ?? type.getSymbol())?.getName() ?? '';

/** The rows of the table under `heading` (up to the next heading of that level): first cell → row. */
function table(heading: string): Map<string, string> {
  const from = page.indexOf(`\n${heading}\n`);
  expect(from, `docs/fetch.md has a "${heading}" section`).toBeGreaterThan(-1);
  const level = heading.slice(0, heading.indexOf(' ') + 1);
  const next = page.indexOf(`\n${level}`, from + heading.length + 2);
  const section = page.slice(from, next === -1 ? undefined : next);
  const rows = new Map<string, string>();
  for (const line of section.split('\n')) {
    const cell = /^\|\s*`([^`]+)`\s*\|/.exec(line);
    if (cell?.[1] !== undefined) rows.set(cell[1], line);
  }
  return rows;
}

const options = checker.getPropertiesOfType(exported('fetch.ts', 'StaunchOptions'));
const listeners = checker.getPropertiesOfType(exported('events.ts', 'StaunchListeners'));

/** `retry`, `retry.attempts`, …: each option, and each field of an `…Options` object it takes. */
const optionNames = options.flatMap((option) => {
  const nested = members(typeOf(option)).filter((t) => nameOf(t).endsWith('Options'));
  return [
    option.name,
    ...nested.flatMap((t) => checker.getPropertiesOfType(t).map((p) => `${option.name}.${p.name}`)),
  ];
});

describe('docs/fetch.md', () => {
  test('the types are read (the lists below are not empty by accident)', () => {
    expect(optionNames).toEqual(
      expect.arrayContaining(['fetch', 'resume', 'retry.attempts', 'breaker.probeInterval']),
    );
    expect(listeners.map((l) => l.name)).toEqual(
      expect.arrayContaining(['attempt', 'end', 'storeDegraded']),
    );
  });

  test('the options table has a row for every option and every field of its objects', () => {
    const rows = table('## Options');
    const missing = optionNames.filter((name) => !rows.has(name));
    expect(missing, 'options of StaunchOptions without a row').toEqual([]);
    const unknown = [...rows.keys()].filter((name) => !optionNames.includes(name));
    expect(unknown, 'rows that name no option').toEqual([]);
  });

  test('the events table has a row for every listener, naming every field of its event', () => {
    const rows = table('## Events');
    const gaps: string[] = [];
    for (const listener of listeners) {
      const row = rows.get(listener.name);
      if (row === undefined) {
        gaps.push(`${listener.name}: no row`);
        continue;
      }
      const [signature] = typeOf(listener).getCallSignatures();
      const [parameter] = signature?.getParameters() ?? [];
      if (parameter === undefined) throw new Error(`on.${listener.name} takes no event`);
      const fields = checker.getPropertiesOfType(checker.getTypeOfSymbol(parameter));
      for (const field of fields) {
        const cells = row.split('|').slice(3).join('|');
        if (!cells.includes(`\`${field.name}\``)) gaps.push(`${listener.name}: ${field.name}`);
      }
    }
    expect(gaps, 'listeners or event fields the table leaves out').toEqual([]);
    const unknown = [...rows.keys()].filter((name) => !listeners.some((l) => l.name === name));
    expect(unknown, 'rows that name no listener').toEqual([]);
  });
});

/** The text of a page's code: fenced blocks and inline code spans. */
function codeOf(markdown: string): string {
  const fenced = [...markdown.matchAll(/^```[^\n]*\n([\s\S]*?)^```/gm)].map((m) => m[1]);
  const inline = [...markdown.replace(/^```[\s\S]*?^```/gm, '').matchAll(/`([^`\n]+)`/g)].map(
    (m) => m[1],
  );
  return [...fenced, ...inline].join('\n');
}

describe.each(ENTRY_OPTIONS)('src/%s %s', (file, type, path) => {
  test(`every option is named in ${path}`, () => {
    const code = codeOf(readFileSync(join(root, path), 'utf8'));
    const names = checker.getPropertiesOfType(exported(file, type)).map((p) => p.name);
    expect(names.length).toBeGreaterThan(0);
    expect(names.filter((name) => !new RegExp(`\\b${name}\\b`).test(code))).toEqual([]);
  });
});

test('the default backoff is described as the one that runs: decorrelated jitter', () => {
  // With random() = 0, decorrelated jitter gives its floor, `base` (250 ms), whatever the
  // attempt; full jitter would give 0, no jitter 250 × 2ⁿ, equal jitter half of that.
  const zero = () => 0;
  expect([1, 2, 3].map((n) => DEFAULT_RETRY.backoff(n, 1_000, zero))).toEqual([250, 250, 250]);
  const row = table('## Options').get('retry.backoff');
  expect(row).toContain("jitter: 'decorrelated'");
  expect(strategyConfig('staunch').description).toContain('decorrelated jitter');
});
