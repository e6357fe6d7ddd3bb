import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

/**
 * `staunch/undici` supports undici 7 and 8 (peerDependency `^7 || ^8`). The
 * dev dependency `undici` is 7; `undici8` is an npm alias of 8. With
 * STAUNCH_UNDICI=8, every `import … from 'undici'` in src/ and test/ resolves
 * to the alias, so the same test files run against the other major
 * (`npm run test:undici8`; CI runs both).
 */
const undiciMajor = process.env.STAUNCH_UNDICI ?? '7';
if (undiciMajor !== '7' && undiciMajor !== '8') {
  throw new RangeError(`STAUNCH_UNDICI must be 7 or 8, got ${JSON.stringify(undiciMajor)}`);
}

export default defineConfig({
  resolve: {
    alias:
      undiciMajor === '8'
        ? [
            {
              find: /^undici$/,
              replacement: fileURLToPath(
                new URL('./node_modules/undici8/index.js', import.meta.url),
              ),
            },
          ]
        : [],
  },
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    pool: 'forks',
    execArgv: ['--expose-gc'],
  },
});
