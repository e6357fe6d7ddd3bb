/**
 * The event-stream parser against the HTML standard (§9.2.6): a table of
 * cases, then fast-check properties over generated streams cut at random.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EventStreamParser } from '../../src/sse/parse.js';
import { encoder, parseChunks, split } from './support.js';

type Expected = [event: string, data: string, id?: string, retry?: number];

const cases: [name: string, input: string, expected: Expected[]][] = [
  ['one event', 'data: hello\n\n', [['message', 'hello']]],
  ['no space after the colon', 'data:hello\n\n', [['message', 'hello']]],
  ['only one leading space is removed', 'data:  two\n\n', [['message', ' two']]],
  ['a tab is kept', 'data:\tx\n\n', [['message', '\tx']]],
  ['data lines joined with LF', 'data: a\ndata: b\ndata:\n\n', [['message', 'a\nb\n']]],
  ['a field without colon has an empty value', 'data\n\n', [['message', '']]],
  ['a colon inside the value', 'data: a:b: c\n\n', [['message', 'a:b: c']]],
  ['no data: nothing is dispatched', 'event: x\n\n', []],
  [
    'the type resets after each event',
    'event: x\ndata: 1\n\ndata: 2\n\n',
    [
      ['x', '1'],
      ['message', '2'],
    ],
  ],
  ['an empty event name is message', 'event:\ndata: x\n\n', [['message', 'x']]],
  [
    'the id persists across events',
    'id: 1\ndata: a\n\ndata: b\n\n',
    [
      ['message', 'a', '1'],
      ['message', 'b', '1'],
    ],
  ],
  ['a block without data still sets the id', 'id: 7\n\ndata: b\n\n', [['message', 'b', '7']]],
  [
    'an empty id resets it',
    'id: 1\ndata: a\n\nid\ndata: b\n\n',
    [
      ['message', 'a', '1'],
      ['message', 'b', ''],
    ],
  ],
  ['an id with NUL is ignored', 'id: 1\n\nid: a\0b\ndata: x\n\n', [['message', 'x', '1']]],
  ['retry sets the reconnection time', 'retry: 1500\ndata: x\n\n', [['message', 'x', '', 1500]]],
  [
    'retry that is not only digits is ignored',
    'retry: 10\n\nretry: 1s\nretry: -1\nretry:\nretry: 2.5\ndata: x\n\n',
    [['message', 'x', '', 10]],
  ],
  ['comments are ignored', ': hi\n:\ndata: x\n: there\n\n', [['message', 'x']]],
  ['unknown fields are ignored', 'foo: bar\ndata: x\n\n', [['message', 'x']]],
  ['field names are case-sensitive', 'Data: x\nDATA: y\n\n', []],
  ['a space before the colon is part of the name', 'data : x\n\n', []],
  ['CRLF', 'data: x\r\ndata: y\r\n\r\n', [['message', 'x\ny']]],
  ['CR', 'data: x\rdata: y\r\r', [['message', 'x\ny']]],
  [
    'mixed line ends',
    'data: a\rdata: b\n\r\ndata: c\r\n\n',
    [
      ['message', 'a\nb'],
      ['message', 'c'],
    ],
  ],
  [
    'CR CR is an empty line',
    'data: a\r\rdata: b\r\n\r\n',
    [
      ['message', 'a'],
      ['message', 'b'],
    ],
  ],
  [
    'LF CR is two line ends',
    'data: a\n\rdata: b\n\n',
    [
      ['message', 'a'],
      ['message', 'b'],
    ],
  ],
  ['leading blank lines', '\n\n\r\ndata: x\n\n', [['message', 'x']]],
  ['a leading BOM is dropped', '\uFEFFdata: x\n\n', [['message', 'x']]],
  ['only one BOM is dropped', '\uFEFF\uFEFFdata: x\n\n', []],
  ['a BOM later is data', 'data: \uFEFFx\n\n', [['message', '\uFEFFx']]],
  ['no final blank line: the last event is discarded', 'data: a\n\ndata: b\n', [['message', 'a']]],
  ['no final line end', 'data: a\n\ndata: b', [['message', 'a']]],
  ['non-ASCII', 'event: é\ndata: 日本語 😀\n\n', [['é', '日本語 😀']]],
];

describe('the event-stream parser (HTML §9.2.6)', () => {
  it.each(cases)('%s', (_name, input, expected) => {
    const events = parseChunks([encoder.encode(input)]);
    expect(events.map((e) => [e.event, e.data, e.id, e.retry])).toEqual(
      expected.map(([event, data, id = '', retry]) => [event, data, id, retry]),
    );
  });

  it.each(cases)('%s, one byte at a time', (_name, input, expected) => {
    const bytes = encoder.encode(input);
    const events = parseChunks(split(bytes, [...bytes.keys()]));
    expect(events.map((e) => [e.event, e.data])).toEqual(expected.map(([e, d]) => [e, d]));
  });

  it('decodes invalid UTF-8 as U+FFFD, split or not', () => {
    const bytes = new Uint8Array([...encoder.encode('data: a'), 0xff, 0xe2, 0x82, 10, 10]);
    for (const cuts of [[], [8], [9], [7, 8, 9, 10]]) {
      expect(parseChunks(split(bytes, cuts)).map((e) => e.data)).toEqual(['a\uFFFD\uFFFD']);
    }
  });

  it('only the first BOM is dropped, wherever a chunk boundary cuts it', () => {
    // Node 24 and 26's TextDecoder, fed the first BOM in two pieces, dropped the second too.
    const bytes = encoder.encode('\uFEFF\uFEFFdata\n\rdata: x\n\n');
    for (let cut = 0; cut <= 6; cut++) {
      expect(parseChunks(split(bytes, [cut])).map((e) => e.data)).toEqual(['x']);
    }
  });

  it('a CR at the end of one chunk and an LF at the start of the next are one line end', () => {
    const events = parseChunks([encoder.encode('data: a\r'), encoder.encode('\ndata: b\r\n\r\n')]);
    expect(events.map((e) => e.data)).toEqual(['a\nb']);
  });

  it('midEvent says whether the stream stopped inside an event', () => {
    const parser = new EventStreamParser(() => {});
    expect(parser.midEvent).toBe(false);
    parser.push(encoder.encode('data: a'));
    expect(parser.midEvent).toBe(true);
    parser.push(encoder.encode('\n'));
    expect(parser.midEvent).toBe(true);
    parser.push(encoder.encode('\n: comment\n'));
    expect(parser.midEvent).toBe(false);
    expect(parser.end()).toBe(false);
    // A character cut by the end of the stream is a partial line.
    const cut = new EventStreamParser(() => {});
    cut.push(new Uint8Array([...encoder.encode('data: a\n\n'), 0xe2, 0x82]));
    expect(cut.midEvent).toBe(false);
    expect(cut.end()).toBe(true);
  });

  it('a long line cut into many chunks is assembled once', () => {
    const value = 'x'.repeat(200_000);
    const bytes = encoder.encode(`data: ${value}\n\n`);
    const events = parseChunks(
      split(
        bytes,
        Array.from({ length: 400 }, (_, i) => i * 500),
      ),
    );
    expect(events).toHaveLength(1);
    expect(events[0]!.data.length).toBe(200_000);
  });
});

// A stream built from SSE-like fragments, so that random bytes hit every branch.
const fragment = fc.constantFrom(
  'data',
  'event',
  'id',
  'retry',
  ':',
  ': ',
  ' ',
  '\r',
  '\n',
  '\r\n',
  'x',
  '42',
  'é',
  '€',
  '😀',
  '\uFEFF',
  '\0',
);
const streamBytes = fc.oneof(
  fc.array(fragment, { maxLength: 60 }).map((parts) => encoder.encode(parts.join(''))),
  fc.uint8Array({ maxLength: 200 }),
);
const cuts = fc.array(fc.nat(), { maxLength: 12 });

// Values without CR, LF or NUL (they cannot appear in a field value).
const value = fc.string({ unit: fc.constantFrom('a', ' ', ':', 'é', '😀', '\t', '\uFEFF', '1') });
const modelEvent = fc.record({
  type: fc.option(value, { nil: undefined }),
  data: fc.array(value, { minLength: 1, maxLength: 3 }),
  id: fc.option(value, { nil: undefined }),
  retry: fc.option(fc.nat({ max: 100_000 }), { nil: undefined }),
  comment: fc.option(value, { nil: undefined }),
});
const lineEnd = fc.constantFrom('\n', '\r', '\r\n');

describe('properties', () => {
  it('any split of the bytes gives the same events as the whole', () => {
    fc.assert(
      fc.property(streamBytes, cuts, (bytes, at) => {
        expect(parseChunks(split(bytes, at))).toEqual(parseChunks([bytes]));
      }),
      { numRuns: 2000 },
    );
  });

  it('a generated stream, written with any line ends and cut anywhere, parses to its events', () => {
    fc.assert(
      fc.property(
        fc.array(modelEvent, { maxLength: 6 }),
        fc.array(lineEnd, { minLength: 1, maxLength: 8 }),
        fc.boolean(),
        cuts,
        (events, ends, bom, at) => {
          let n = 0;
          let last = '';
          // A blank line's LF right after a CR would be read as one CRLF: not a blank line.
          const end = (blank = false) => {
            let e = ends[n++ % ends.length]!;
            if (blank && last === '\r' && e === '\n') e = '\r\n';
            last = e;
            return e;
          };
          let text = bom ? '\uFEFF' : '';
          for (const e of events) {
            if (e.comment !== undefined) text += `:${e.comment}${end()}`;
            if (e.type !== undefined) text += `event: ${e.type}${end()}`;
            if (e.id !== undefined) text += `id: ${e.id}${end()}`;
            if (e.retry !== undefined) text += `retry: ${e.retry}${end()}`;
            for (const d of e.data) text += `data: ${d}${end()}`;
            text += end(true);
          }
          const expected: unknown[] = [];
          let id = '';
          let retry: number | undefined;
          for (const e of events) {
            if (e.id !== undefined) id = e.id;
            if (e.retry !== undefined) retry = e.retry;
            expected.push({ event: e.type || 'message', data: e.data.join('\n'), id, retry });
          }
          expect(parseChunks(split(encoder.encode(text), at))).toEqual(expected);
        },
      ),
      { numRuns: 1000 },
    );
  });
});
