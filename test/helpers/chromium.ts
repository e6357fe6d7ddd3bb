import { spawnSync } from 'node:child_process';

/** The headless Chromium binary (`CHROMIUM_BIN`, `chromium`, `chromium-browser`), if one runs. */
export function findChromium(): string | undefined {
  for (const name of [process.env.CHROMIUM_BIN, 'chromium', 'chromium-browser']) {
    if (!name) continue;
    const r = spawnSync(name, ['--version'], { stdio: 'ignore', timeout: 20_000 });
    if (r.error === undefined && r.status === 0) return name;
  }
  return undefined;
}

/** Flags for a quiet, offline headless run with a fresh profile in `profile`. */
export function headlessFlags(profile: string): string[] {
  return [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    `--user-data-dir=${profile}`,
  ];
}

/**
 * The Chromium binary, or the test skipped with a loud warning (`what` was
 * not checked); on CI (`CI=true`) a missing binary fails the test instead.
 */
export function chromiumOrSkip(ctx: { skip: () => void }, what: string): string | undefined {
  const chromium = findChromium();
  if (chromium !== undefined) return chromium;
  if (process.env.CI === 'true') throw new Error('CI=true but no chromium binary was found');
  console.warn(
    `\n\n!!!!!!!! SKIPPED: no chromium binary (apt-get install chromium); ${what} !!!!!!!!\n`,
  );
  ctx.skip();
  return undefined;
}
