/**
 * The package built once per test file into a temporary directory: for tests
 * that need the `staunch` bin as a process or the lab's live mode (its
 * upstream is a child process running the built server module).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll } from 'vitest';
import type * as Lab from '../../src/lab/index.js';

export interface BuiltLab {
  readonly dir: string;
  readonly bin: string;
  readonly lab: typeof Lab;
  remove(): void;
}

export async function buildLab(): Promise<BuiltLab> {
  const root = resolve(import.meta.dirname, '../..');
  const dir = mkdtempSync(join(tmpdir(), 'staunch-lab-built-'));
  const dist = join(dir, 'dist');
  // Emits even if another module of the tree does not typecheck yet; the lab's files must be there.
  spawnSync(
    process.execPath,
    [join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json', '--outDir', dist],
    { cwd: root, stdio: 'ignore' },
  );
  for (const f of ['cli/index.js', 'lab/index.js', 'lab/live/server.js', 'lab/sim/worker.js']) {
    if (!existsSync(join(dist, f))) throw new Error(`build did not produce ${f}`);
  }
  const lab = (await import(pathToFileURL(join(dist, 'lab/index.js')).href)) as typeof Lab;
  return {
    dir,
    bin: join(dist, 'cli', 'index.js'),
    lab,
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** Builds the lab before the file's tests and removes it after them; the getter gives it. */
export function useBuiltLab(): () => BuiltLab {
  let built: BuiltLab | undefined;
  beforeAll(async () => {
    built = await buildLab();
  }, 120_000);
  afterAll(() => built?.remove());
  return () => {
    if (built === undefined) throw new Error('the lab is not built yet');
    return built;
  };
}
