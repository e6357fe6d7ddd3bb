/**
 * Every relative link of the reference pages (README.md and docs/*.md)
 * resolves: the file exists, and a `#anchor` names a heading of that file
 * (or an `<a id>` in it), slugged as GitHub slugs headings. A page that
 * renames or drops a section breaks its inbound links here, not in a
 * reader's browser.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, test } from 'vitest';

const root = resolve(import.meta.dirname, '../..');
const pages = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];

/** The page's text outside fenced code blocks (a link in a code sample is not a link). */
function prose(text: string): string {
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
}

/**
 * GitHub's slug of a heading: its text without Markdown (links keep their
 * text, code spans their content), lower-cased, every character that is not
 * a letter, mark, digit, connector (`_`), space or hyphen dropped, spaces
 * turned into hyphens.
 */
function slug(heading: string): string {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors of a page: its headings' slugs (a repeated one gets -1, -2, …) and explicit ids. */
function anchors(text: string): Set<string> {
  const out = new Set<string>();
  const seen = new Map<string, number>();
  for (const [, heading] of prose(text).matchAll(/^#{1,6}[ \t]+(.+?)[ \t#]*$/gm)) {
    const base = slug(heading ?? '');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    out.add(count === 0 ? base : `${base}-${count}`);
  }
  for (const [, id] of text.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) out.add(id ?? '');
  return out;
}

/** The relative links of a page: `[text](target)`, targets without a scheme. */
function links(text: string): string[] {
  const out: string[] = [];
  for (const [, target] of prose(text).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
    if (target !== undefined && !/^[a-z][a-z0-9+.-]*:/i.test(target)) out.push(target);
  }
  return out;
}

describe('slug', () => {
  test.each([
    ['Requests/s on loopback', 'requestss-on-loopback'],
    [
      'What `staunch/undici` costs a request, counted',
      'what-staunchundici-costs-a-request-counted',
    ],
    ["The peers' success path", 'the-peers-success-path'],
    ['`timeout.total` × attempts', 'timeouttotal--attempts'],
    ['A [linked](x.md) heading', 'a-linked-heading'],
  ])('%s → %s', (heading, expected) => {
    expect(slug(heading)).toBe(expected);
  });

  test('a repeated heading gets -1, an explicit id counts', () => {
    const found = anchors('# A\n## A\n```\n# not a heading\n```\n<a id="x"></a>\n');
    expect([...found]).toEqual(['a', 'a-1', 'x']);
  });
});

describe.each(pages)('%s', (page) => {
  test('every relative link resolves to a file and, with #, to a heading of it', () => {
    const text = readFileSync(join(root, page), 'utf8');
    const broken: string[] = [];
    for (const link of links(text)) {
      const [path = '', anchor] = link.split('#');
      const file = path === '' ? join(root, page) : resolve(dirname(join(root, page)), path);
      if (!existsSync(file)) {
        broken.push(`${link} (no file ${relative(root, file)})`);
        continue;
      }
      if (anchor === undefined || anchor === '' || !file.endsWith('.md')) continue;
      if (!anchors(readFileSync(file, 'utf8')).has(decodeURIComponent(anchor))) {
        broken.push(`${link} (no heading #${anchor} in ${relative(root, file)})`);
      }
    }
    expect(broken).toEqual([]);
  });
});
