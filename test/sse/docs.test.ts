/**
 * docs/sse.md, run: every `js` block either runs against a local server
 * (`BASE`) with its output compared to the `text` block after it, or is
 * marked as an excerpt of an example file and must appear in it verbatim.
 * No block of the page goes untested.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import * as core from '../../src/index.js';
import * as sse from '../../src/sse/index.js';
import { httpServer, type TestServer } from '../helpers/server.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const page = readFileSync(`${ROOT}docs/sse.md`, 'utf8');
const MODULES: Record<string, Record<string, unknown>> = { staunch: core, 'staunch/sse': sse };

interface Block {
  code: string;
  output: string | undefined;
  excerpt: string | undefined;
  line: number;
}

function blocks(markdown: string): Block[] {
  const lines = markdown.split('\n');
  const out: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (lines[i] !== '```js') continue;
    const marker = /^<!-- excerpt: (\S+) -->$/.exec(lines[i - 1] ?? '');
    const end = lines.indexOf('```', i + 1);
    const code = lines.slice(i + 1, end).join('\n');
    let output: string | undefined;
    let j = end + 1;
    while (lines[j] === '') j++;
    if (lines[j] === '```text') {
      const close = lines.indexOf('```', j + 1);
      output = lines.slice(j + 1, close).join('\n');
    }
    out.push({ code, output, excerpt: marker?.[1], line: i + 1 });
    i = end;
  }
  return out;
}

const AsyncFunction = (async () => {}).constructor as new (
  ...args: string[]
) => (...values: unknown[]) => Promise<void>;

/** Runs a block with its imports bound to the sources and `BASE` to `base`; returns what it logged. */
async function run(code: string, base: string): Promise<string> {
  const names: string[] = [];
  const values: unknown[] = [];
  const body = code
    .split('\n')
    .filter((line) => {
      const m = /^import \{ (.+) \} from '([^']+)';$/.exec(line);
      if (m) {
        for (const name of m[1]!.split(',').map((n) => n.trim())) {
          names.push(name);
          values.push(MODULES[m[2]!]![name]);
        }
        return false;
      }
      return !line.startsWith('const BASE = ');
    })
    .join('\n');
  const logged: string[] = [];
  const console = { log: (...args: unknown[]) => logged.push(args.join(' ')) };
  await new AsyncFunction(...names, 'BASE', 'console', body)(...values, base, console);
  return logged.join('\n');
}

const servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

/** The endpoints the page's examples call. */
async function docsServer(): Promise<TestServer> {
  let messages = 0;
  let feed = 0;
  const server = await httpServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    if (req.url === '/tokens') {
      res.write('event: delta\ndata: Hello\n\nevent: delta\ndata: world\n\nevent: done\ndata:\n\n');
    } else if (req.url === '/v1/messages') {
      if (messages++ === 0) {
        res.end('event: error\ndata: {"type":"error","error":{"type":"overloaded_error"}}\n\n');
      } else {
        res.end(
          'event: message_start\ndata: {}\n\nevent: content_block_delta\ndata: {"text":"hi"}\n\nevent: message_stop\ndata: {}\n\n',
        );
      }
    } else if (req.url === '/feed') {
      if (feed++ === 0) {
        res.write('retry: 10\nid: 1\ndata: one\n\nid: 2\ndata: tw', () => res.socket?.destroy());
      } else if (req.headers['last-event-id'] === '1') {
        res.end('id: 2\ndata: two\n\nid: 3\ndata: three\n\n');
      } else res.end();
    } else res.end();
  });
  servers.push(server);
  return server;
}

const all = blocks(page);

describe('docs/sse.md', () => {
  it('has runnable examples and excerpts, and nothing else', () => {
    expect(all.filter((b) => b.output !== undefined).length).toBeGreaterThanOrEqual(4);
    expect(all.filter((b) => b.excerpt !== undefined).length).toBeGreaterThanOrEqual(3);
    for (const b of all) expect(b.output !== undefined || b.excerpt !== undefined).toBe(true);
  });

  for (const b of all.filter((x) => x.output !== undefined)) {
    it(`the example at line ${b.line} prints what the page says`, async () => {
      const server = await docsServer();
      const printed = await run(b.code, server.url);
      expect(printed.replace(/\n+$/, '')).toBe(b.output!.replace(/\n+$/, ''));
    });
  }

  for (const b of all.filter((x) => x.excerpt !== undefined)) {
    it(`the excerpt at line ${b.line} is part of ${b.excerpt}`, () => {
      expect(readFileSync(`${ROOT}${b.excerpt}`, 'utf8')).toContain(b.code);
    });
  }
});
