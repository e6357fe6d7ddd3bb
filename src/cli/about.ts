/** What the CLI says about itself: its version, and the command line it ran (redacted). */
import { readFileSync } from 'node:fs';
import { redactUrl } from '../internal/redact.js';

/** The package's version (dist/cli/ and src/cli/ both sit two levels under package.json). */
export function version(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
    return typeof pkg.version === 'string' ? pkg.version : 'unknown';
  } catch {
    return 'unknown';
  }
}

/** `args` as a shell line, quoted where needed, URLs redacted (`--store redis://:pw@…`). */
export function commandLine(args: readonly string[]): string {
  return args
    .map((a) => (/^[a-z][a-z0-9+.-]*:\/\//i.test(a) ? redactUrl(a) : a))
    .map((a) => (/^[\w.,:=/@+*-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`))
    .join(' ');
}
