/**
 * Compiled JavaScript for the child processes of the fleet tests: src/redis,
 * the fleet harness (src/lab/fleet/harness.ts and the process entry
 * child.ts) and the core they import, built once per content of src/ into a temp
 * directory (shared by the test files, which run in parallel: a lock
 * directory makes one of them build while the others wait). The directory
 * links node_modules so that `ioredis` resolves from it, and its package.json
 * is named `staunch`, so that an example run from inside imports this build.
 * Builds of an older src/ than an hour are removed.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(fileURLToPath(new URL('../../..', import.meta.url)));
const ENTRIES = [
  'src/index.ts',
  'src/redis/index.ts',
  'src/lab/fleet/harness.ts',
  'src/lab/fleet/child.ts',
];

function hashTree(dir: string, hash: ReturnType<typeof createHash>): void {
  for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) =>
    a.name.localeCompare(b.name),
  )) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) hashTree(path, hash);
    else if (entry.name.endsWith('.ts')) hash.update(path).update(readFileSync(path));
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

function tsc(project: string): Promise<string> {
  const bin = join(ROOT, 'node_modules/typescript/bin/tsc');
  return new Promise((resolveRun) => {
    execFile(process.execPath, [bin, '-p', project], { cwd: ROOT }, (_error, stdout) =>
      resolveRun(stdout),
    );
  });
}

let cached: Promise<string> | undefined;

/** The directory holding `dist/` (compiled src) for child processes. */
export function compiledDist(): Promise<string> {
  cached ??= build();
  return cached;
}

async function build(): Promise<string> {
  const hash = createHash('sha256');
  hashTree(join(ROOT, 'src'), hash);
  hash.update(readFileSync(join(ROOT, 'tsconfig.build.json')));
  // This file decides the layout too.
  hash.update(readFileSync(fileURLToPath(import.meta.url)));
  const dir = join(tmpdir(), `staunch-redis-build-${hash.digest('hex').slice(0, 16)}`);
  const done = join(dir, 'dist', '.done');
  const lock = `${dir}.lock`;
  for (let waited = 0; !existsSync(done); waited += 100) {
    try {
      mkdirSync(lock);
    } catch {
      if (waited > 180_000) throw new Error(`timed out waiting for ${lock}`);
      await sleep(100);
      continue;
    }
    try {
      if (existsSync(done)) break;
      const work = `${dir}.tmp-${process.pid}`;
      rmSync(work, { recursive: true, force: true });
      mkdirSync(work, { recursive: true });
      // Named like the package, so that `import 'staunch'` from inside resolves to this build.
      const manifest = {
        name: 'staunch',
        type: 'module',
        exports: { '.': './dist/index.js', './redis': './dist/redis/index.js' },
      };
      writeFileSync(join(work, 'package.json'), `${JSON.stringify(manifest)}\n`);
      symlinkSync(join(ROOT, 'node_modules'), join(work, 'node_modules'), 'dir');
      const project = join(work, 'tsconfig.json');
      writeFileSync(
        project,
        JSON.stringify({
          extends: join(ROOT, 'tsconfig.build.json'),
          compilerOptions: {
            outDir: join(work, 'dist'),
            rootDir: join(ROOT, 'src'),
            declaration: false,
            declarationMap: false,
            isolatedDeclarations: false,
            sourceMap: false,
          },
          include: [],
          files: ENTRIES.map((entry) => join(ROOT, entry)),
        }),
      );
      const output = await tsc(project);
      if (!existsSync(join(work, 'dist', 'lab', 'fleet', 'child.js'))) {
        throw new Error(`tsc did not emit the fleet member:\n${output}`);
      }
      // Type errors elsewhere in the tree (work in progress) do not stop the emit.
      writeFileSync(join(work, 'dist', '.done'), output);
      rmSync(dir, { recursive: true, force: true });
      renameSync(work, dir);
    } finally {
      rmSync(lock, { recursive: true, force: true });
    }
  }
  removeStale(dir);
  return dir;
}

function removeStale(current: string): void {
  const hourAgo = Date.now() - 3_600_000;
  for (const entry of readdirSync(tmpdir(), { withFileTypes: true })) {
    const path = join(tmpdir(), entry.name);
    if (!entry.name.startsWith('staunch-redis-build-') || path === current) continue;
    try {
      if (statSync(path).mtimeMs < hourAgo) rmSync(path, { recursive: true, force: true });
    } catch {
      // Another test run removed it first.
    }
  }
}
