/** The compiled fleet harness (`startFleet`, src/lab/fleet/harness.ts) for fleet tests, and paths of the member modules. */
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { compiledDist } from './build.js';

type Harness = typeof import('../../../src/lab/fleet/harness.js');

/**
 * `startFleet` from the compiled build, plus its `dist` directory (the
 * members import the compiled core and `staunch/redis` from there).
 */
export async function compiledFleet(): Promise<{
  startFleet: Harness['startFleet'];
  dist: string;
}> {
  const dist = join(await compiledDist(), 'dist');
  const harness = (await import(pathToFileURL(join(dist, 'lab/fleet/harness.js')).href)) as Harness;
  return { startFleet: harness.startFleet, dist };
}

/** Absolute path of a member module in test/redis/members. */
export function member(name: string): string {
  return fileURLToPath(new URL(`../members/${name}.mjs`, import.meta.url));
}
