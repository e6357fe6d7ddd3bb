import { createRequire } from 'node:module';
import { Agent } from 'undici';
import { expect, test } from 'vitest';

// Guards the STAUNCH_UNDICI switch in vitest.config.ts: without it, a broken
// alias would run the "undici 8" pass against undici 7 and still be green.
// `require` is not aliased, so it always gives the dev dependency undici 7.
const require = createRequire(import.meta.url);
const major = process.env.STAUNCH_UNDICI ?? '7';

test(`'undici' in src/ and test/ resolves to undici ${major}`, async () => {
  const undici7: { Agent: unknown } = require('undici');
  if (major === '8') {
    // Imported only here: undici 8 does not load on Node 20.
    const undici8: { Agent: unknown } = await import('undici8');
    expect(Agent).toBe(undici8.Agent);
    expect(Agent).not.toBe(undici7.Agent);
  } else {
    expect(Agent).toBe(undici7.Agent);
  }
});
