import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

/**
 * The bench harness's own tests (`npm run bench:test`): its statistics and
 * its callgrind reader. Kept out of the product's suite, which tests staunch.
 */
export default defineConfig({
  root: fileURLToPath(new URL('..', import.meta.url)),
  test: { include: ['bench/test/**/*.test.ts'] },
});
