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
const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
if (undiciMajor === '8' && (major < 22 || (major === 22 && minor < 19))) {
  // undici 8's engines; on Node 20 it throws while loading, far from the cause.
  throw new RangeError(
    `STAUNCH_UNDICI=8 needs Node >= 22.19 (undici 8's engines), got ${process.versions.node}: ` +
      'run it as `npx -y node@24 node_modules/vitest/vitest.mjs run …`',
  );
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
