/**
 * The import rules of docs/architecture.md, checked on src/ as it is. Each
 * rule says who may import what; a failure names the file and the import.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join, resolve, sep } from 'node:path';
import { describe, expect, test } from 'vitest';
import { closure, cycles, type Import, importsOf, sourceFiles } from './imports.js';

const root = resolve(import.meta.dirname, '../..');
const src = join(root, 'src');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  name: string;
  exports: Record<string, string | { default?: string }>;
  bin: Record<string, string>;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
};
const graph = new Map(sourceFiles(src).map((file) => [file, importsOf(src, file)]));

/** './dist/undici/index.js' → 'undici/index.ts' (tsconfig.build.json: rootDir src, outDir dist). */
const fromDist = (target: string) => target.replace(/^\.\/dist\//, '').replace(/\.js$/, '.ts');

/** Each package entry (exports subpath or bin) and the src/ file behind it. */
const entries = [
  ...Object.entries(pkg.exports)
    .filter(([key]) => !key.endsWith('.json'))
    .map(([key, target]) => ({
      name: key === '.' ? pkg.name : `${pkg.name}/${key.slice(2)}`,
      file: fromDist(typeof target === 'string' ? target : (target.default ?? '')),
    })),
  ...Object.entries(pkg.bin).map(([name, target]) => ({
    name: `bin ${name}`,
    file: fromDist(target),
  })),
];

/** Entries that run wherever a WHATWG fetch does (DESIGN.md: "depends on: nothing"). */
const PORTABLE = [
  'index.ts',
  'deadline/index.ts',
  'llm/index.ts',
  'request-init.ts',
  'sse/index.ts',
  'store/index.ts',
  'testing/index.ts',
];

/**
 * Where each peer dependency may be imported statically: its adapter's
 * folder, and for undici also the fault Dispatcher of `staunch/testing/undici`
 * (an entry of its own, so that `staunch/testing` loads without undici).
 */
const PEER_HOME: Record<string, readonly string[]> = {
  undici: ['undici/', 'testing/undici.ts'],
  ioredis: ['redis/'],
  redis: ['redis/'],
  '@opentelemetry/api': ['otel/'],
};

/** Is `file` in one of `peer`'s homes? */
const atHome = (peer: string, file: string) =>
  (PEER_HOME[peer] ?? []).some((home) => file.startsWith(home));

/** `file: specifier` for each import in `files` that `bad` flags. */
function offending(files: Iterable<string>, bad: (i: Import, file: string) => boolean): string[] {
  const out: string[] = [];
  for (const file of files) {
    for (const i of graph.get(file) ?? []) if (bad(i, file)) out.push(`${file}: ${i.specifier}`);
  }
  return out;
}

const bare = (i: Import) => i.target === undefined;
const packageName = (specifier: string) =>
  specifier.startsWith('@')
    ? specifier.split('/').slice(0, 2).join('/')
    : (specifier.split('/')[0] ?? '');

describe('entries', () => {
  test('every entry in package.json has its source file', () => {
    expect(entries.length).toBeGreaterThan(2);
    for (const { name, file } of entries)
      expect(graph.has(file), `${name} → src/${file}`).toBe(true);
  });

  test('the portable entries (core, sse, store) and all they import use only relative modules: no node:, no package', () => {
    for (const file of PORTABLE) {
      expect(graph.has(file), file).toBe(true);
      expect(offending(closure(graph, file), bare), file).toEqual([]);
    }
  });

  test('the core reaches no adapter, lab or cli file', () => {
    const outside = [...closure(graph, 'index.ts')].filter((f) =>
      /^(undici|redis|otel|sse|llm|deadline|lab|cli|testing)\//.test(f),
    );
    expect(outside).toEqual([]);
  });

  test('no entry but staunch/lab and the bin reaches the lab or the cli', () => {
    for (const { name, file } of entries) {
      if (file.startsWith('lab/') || file.startsWith('cli/')) continue;
      const reached = [...closure(graph, file)].filter((f) => /^(lab|cli)\//.test(f));
      expect(reached, name).toEqual([]);
    }
  });
});

describe('imports', () => {
  test('only the cli imports the cli', () => {
    expect(
      offending(
        graph.keys(),
        (i, file) => !file.startsWith('cli/') && !!i.target?.startsWith('cli/'),
      ),
    ).toEqual([]);
  });

  test('a bare import is node:, a dependency or a peer dependency; never a dev dependency or the package itself', () => {
    const allowed = new Set([
      ...Object.keys(pkg.dependencies ?? {}),
      ...Object.keys(pkg.peerDependencies ?? {}),
    ]);
    const builtin = (s: string) => s.startsWith('node:') || builtinModules.includes(s);
    expect(
      offending(
        graph.keys(),
        (i) => bare(i) && !builtin(i.specifier) && !allowed.has(packageName(i.specifier)),
      ),
    ).toEqual([]);
    // Bare builtins ('fs') load on Node only by luck of resolution; write node:fs.
    expect(offending(graph.keys(), (i) => bare(i) && builtinModules.includes(i.specifier))).toEqual(
      [],
    );
  });

  test('a peer dependency is loaded at import time only in its adapter folder (elsewhere: import type or import())', () => {
    for (const peer of Object.keys(pkg.peerDependencies ?? {})) {
      expect(PEER_HOME[peer], `add ${peer} to PEER_HOME`).toBeDefined();
    }
    expect(
      offending(graph.keys(), (i, file) => {
        const peer = packageName(i.specifier);
        return bare(i) && peer in PEER_HOME && !i.typeOnly && !i.dynamic && !atHome(peer, file);
      }),
    ).toEqual([]);
  });

  test('loading an entry loads no peer but its own (staunch/otel needs no undici, staunch/lab no ioredis, staunch/testing no undici)', () => {
    for (const { name, file } of entries) {
      const loaded = offending(closure(graph, file, true), (i) => {
        const peer = packageName(i.specifier);
        // A peer is the entry's own when the entry's file is in one of the peer's homes.
        return bare(i) && peer in PEER_HOME && !atHome(peer, file) && !i.typeOnly && !i.dynamic;
      });
      expect(loaded, name).toEqual([]);
    }
  });

  test('every relative import names a file that exists', () => {
    expect(offending(graph.keys(), (i) => i.target !== undefined && !graph.has(i.target))).toEqual(
      [],
    );
  });

  test('no import cycle, type-only imports included', () => {
    expect(cycles(graph).map((group) => group.join(' ↔ '))).toEqual([]);
  });
});

test('docs/architecture.md names every top-level file and folder of src/, and only those', () => {
  const doc = readFileSync(join(root, 'docs/architecture.md'), 'utf8');
  const actual = readdirSync(src, { withFileTypes: true })
    .map((d) => (d.isDirectory() ? `${d.name}/` : d.name))
    .sort();
  // The layer table's first column: | `name/` | or | `name.ts` |
  const named = [...doc.matchAll(/^\| `([\w-]+(?:\/|\.ts))` \|/gm)].map((m) => m[1]).sort();
  expect(named).toEqual(actual);
});

test('docs/architecture.md names every file and folder of src/lab/, and only those', () => {
  const doc = readFileSync(join(root, 'docs/architecture.md'), 'utf8');
  const actual = readdirSync(join(src, 'lab'), { withFileTypes: true })
    .map((d) => (d.isDirectory() ? `${d.name}/` : d.name))
    .sort();
  // The lab table's first column: | `lab/name/` | or | `lab/name.ts` |
  const named = [...doc.matchAll(/^\| `lab\/([\w-]+(?:\/|\.ts))` \|/gm)].map((m) => m[1]).sort();
  expect(named).toEqual(actual);
});

test('docs/architecture.md names every file of src/policy/ and its folders, and only those', () => {
  const doc = readFileSync(join(root, 'docs/architecture.md'), 'utf8');
  const actual = readdirSync(join(src, 'policy'), { recursive: true, encoding: 'utf8' })
    .map((f) => f.split(sep).join('/'))
    .filter((f) => f.endsWith('.ts'))
    .sort();
  // The policies table's first column: | `policy/name.ts` | or | `policy/folder/name.ts` |
  const named = [...doc.matchAll(/^\| `policy\/((?:[\w-]+\/)?[\w-]+\.ts)` \|/gm)]
    .map((m) => m[1])
    .sort();
  expect(named).toEqual(actual);
});
