/**
 * docs/testing.md, run: every `js` block runs with its imports bound to the
 * sources (and the real `openai` SDK), and prints the `text` block after it.
 * No block of the page goes untested.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import * as undiciPackage from 'undici';
import { describe, expect, it } from 'vitest';
import * as core from '../../src/index.js';
import * as testing from '../../src/testing/index.js';
import * as server from '../../src/testing/server.js';
import * as undici from '../../src/testing/undici.js';
import * as staunchUndici from '../../src/undici/index.js';

const page = readFileSync(fileURLToPath(new URL('../../docs/testing.md', import.meta.url)), 'utf8');
const MODULES: Record<string, Record<string, unknown>> = {
  staunch: core,
  'staunch/testing': testing,
  'staunch/testing/server': server,
  'staunch/testing/undici': undici,
  'staunch/undici': staunchUndici,
  openai: { default: OpenAI },
  undici: undiciPackage,
};

/** Each `js` block, the `text` block that follows it, and its line. */
function blocks(markdown: string) {
  const lines = markdown.split('\n');
  const out: { code: string; output: string | undefined; line: number }[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (lines[i] !== '```js') continue;
    const end = lines.indexOf('```', i + 1);
    let j = end + 1;
    while (lines[j] === '') j++;
    const output =
      lines[j] === '```text'
        ? lines.slice(j + 1, lines.indexOf('```', j + 1)).join('\n')
        : undefined;
    out.push({ code: lines.slice(i + 1, end).join('\n'), output, line: i + 1 });
    i = end;
  }
  return out;
}

const AsyncFunction = (async () => {}).constructor as new (
  ...args: string[]
) => (...values: unknown[]) => Promise<void>;

/** Runs a block with its imports bound (`import { a } from` and `import A from`); returns what it logged. */
async function run(code: string): Promise<string> {
  const names: string[] = [];
  const values: unknown[] = [];
  const body = code
    .split('\n')
    .filter((line) => {
      const named = /^import \{ (.+) \} from '([^']+)';$/.exec(line);
      const fallback = /^import (\w+) from '([^']+)';$/.exec(line);
      if (named) {
        for (const name of named[1]!.split(',').map((n) => n.trim())) {
          expect(MODULES[named[2]!]![name], `${name} from ${named[2]}`).toBeDefined();
          names.push(name);
          values.push(MODULES[named[2]!]![name]);
        }
        return false;
      }
      if (fallback) {
        names.push(fallback[1]!);
        values.push(MODULES[fallback[2]!]!.default);
        return false;
      }
      expect(line.startsWith('import '), line).toBe(false);
      return true;
    })
    .join('\n');
  const logged: string[] = [];
  const console = { log: (...args: unknown[]) => logged.push(args.join(' ')) };
  await new AsyncFunction(...names, 'console', body)(...values, console);
  return logged.join('\n');
}

const all = blocks(page);

describe('docs/testing.md', () => {
  it('has runnable examples, each followed by its output', () => {
    expect(all.length).toBeGreaterThanOrEqual(3);
    for (const b of all) expect(b.output, `block at line ${b.line}`).toBeDefined();
  });

  for (const b of all) {
    it(`the example at line ${b.line} prints what the page says`, async () => {
      expect(await run(b.code)).toBe(b.output!.replace(/\n+$/, ''));
    });
  }
});
