/**
 * docs/llm.md: every `js` block is marked as an excerpt of an example file
 * and appears in it verbatim (the examples run in examples.test.ts), and
 * the options and defaults the page states are llm()'s own.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import { LLM_STATUSES, llm } from '../../src/llm/index.js';
import { LLM_IDLE_TIMEOUT, LLM_TIMEOUT } from '../../src/llm/llm.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const page = readFileSync(`${ROOT}docs/llm.md`, 'utf8');

function jsBlocks(markdown: string): { code: string; excerpt: string | undefined; line: number }[] {
  const lines = markdown.split('\n');
  const out = [];
  for (let i = 0; i < lines.length; i++) {
    if (lines[i] !== '```js') continue;
    const marker = /^<!-- excerpt: (\S+) -->$/.exec(lines[i - 1] ?? '');
    const end = lines.indexOf('```', i + 1);
    out.push({ code: lines.slice(i + 1, end).join('\n'), excerpt: marker?.[1], line: i + 1 });
    i = end;
  }
  return out;
}

describe('docs/llm.md', () => {
  const blocks = jsBlocks(page);

  test('has examples', () => {
    expect(blocks.length).toBeGreaterThanOrEqual(4);
  });

  test.each(blocks.map((b) => [b.line, b] as const))(
    'the block at line %i is an example excerpt',
    (_, block) => {
      expect(block.excerpt).toBeDefined();
      const source = readFileSync(`${ROOT}${block.excerpt}`, 'utf8');
      expect(source).toContain(block.code);
    },
  );

  test('the defaults it states', () => {
    const options = llm();
    expect(page).toContain(`statuses: [${LLM_STATUSES.join(', ')}]`);
    expect(options.timeout).toEqual(LLM_TIMEOUT);
    expect(page).toContain(`{ attempt: 600_000, total: 1_800_000 }`);
    expect(LLM_TIMEOUT).toEqual({ attempt: 600_000, total: 1_800_000 });
    expect(LLM_IDLE_TIMEOUT).toBe(300_000);
    expect(page).toContain('| `idleTimeout` | `300_000` |');
    expect(page).toContain(`\`'${options.retryCountHeader}'\``);
  });
});
