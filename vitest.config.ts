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
    testTimeout: 20_000,
    hookTimeout: 20_000,
    pool: 'forks',
    execArgv: ['--expose-gc'],
    /**
     * Two groups, run one after the other. `suite`: every test file, in
     * parallel. `alone` (files named *.alone.test.ts): the few that compare
     * what happens in real time on real sockets (live against sim), run
     * after the suite, one file at a time, so that the suite's own load does
     * not decide their outcome; so do the suites that run a fleet of
     * processes or a real-time upstream outage (test/redis/*.alone.test.ts).
     * `npm test` runs both.
     */
    projects: [
      {
        extends: true,
        test: {
          name: 'suite',
          include: ['test/**/*.test.ts'],
          exclude: ['test/**/*.alone.test.ts'],
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'alone',
          include: ['test/**/*.alone.test.ts'],
          fileParallelism: false,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
