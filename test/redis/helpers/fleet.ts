/** The compiled `staunch/redis` for fleet tests, and paths of the member modules. */
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { compiledDist } from './build.js';

type RedisModule = typeof import('../../../src/redis/index.js');

/** `startFleet` and friends from the compiled build, plus its `dist` directory. */
export async function compiledRedis(): Promise<{ redis: RedisModule; dist: string }> {
  const dist = join(await compiledDist(), 'dist');
  const redis = (await import(pathToFileURL(join(dist, 'redis/index.js')).href)) as RedisModule;
  return { redis, dist };
}

/** Absolute path of a member module in test/redis/members. */
export function member(name: string): string {
  return fileURLToPath(new URL(`../members/${name}.mjs`, import.meta.url));
}
