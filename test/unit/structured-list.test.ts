import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type BareItem, parseStructuredList } from '../../src/retry/structured-list.js';

/** The members of a parsed List as plain data: item and parameters in order. */
function plain(value: string) {
  const list = parseStructuredList(value);
  return list?.map((m) => ({ item: m.item, params: [...m.params] }));
}

describe('parseStructuredList: RFC 9651 Lists', () => {
  it('reads Items of every bare type, with Parameters', () => {
    expect(plain('"a b";x=1;y=-2.5;z="s";t=tok/en:1;f=?0;g, tok;b=:AQI=:;d=@1700000000')).toEqual([
      {
        item: { type: 'string', value: 'a b' },
        params: [
          ['x', { type: 'integer', value: 1 }],
          ['y', { type: 'decimal', value: -2.5 }],
          ['z', { type: 'string', value: 's' }],
          ['t', { type: 'token', value: 'tok/en:1' }],
          ['f', { type: 'boolean', value: false }],
          ['g', { type: 'boolean', value: true }],
        ],
      },
      {
        item: { type: 'token', value: 'tok' },
        params: [
          ['b', { type: 'bytes', value: new Uint8Array([1, 2]) }],
          ['d', { type: 'date', value: 1700000000 }],
        ],
      },
    ]);
  });

  it('reads escapes in Strings and UTF-8 in Display Strings', () => {
    expect(plain('"q\\"b\\\\", %"caf%c3%a9"')?.map((m) => m.item)).toEqual([
      { type: 'string', value: 'q"b\\' },
      { type: 'display', value: 'café' },
    ]);
  });

  it('skips an Inner List but keeps its place and Parameters', () => {
    expect(plain('("a" 1;p);q=2, b')).toEqual([
      { item: undefined, params: [['q', { type: 'integer', value: 2 }]] },
      { item: { type: 'token', value: 'b' }, params: [] },
    ]);
  });

  it('keeps the last value of a repeated parameter key', () => {
    expect(plain('a;r=1;r=2')?.[0]?.params).toEqual([['r', { type: 'integer', value: 2 }]]);
  });

  it('reads an empty or blank value as an empty List, and OWS around commas', () => {
    expect(plain('')).toEqual([]);
    expect(plain('   ')).toEqual([]);
    expect(plain('a \t,\t b  ')?.map((m) => m.item)).toEqual([
      { type: 'token', value: 'a' },
      { type: 'token', value: 'b' },
    ]);
  });

  it.each([
    ['a trailing comma', 'a,'],
    ['an empty member', 'a,,b'],
    ['a Dictionary (an earlier draft of RateLimit)', 'limit=100, remaining=0, reset=9'],
    ['an uppercase key', 'a;R=1'],
    ['an Integer of 16 digits', 'a;t=1234567890123456'],
    ['a Decimal with 4 fractional digits', 'a;t=1.2345'],
    ['a Decimal of 13 integer digits', 'a;t=1234567890123.5'],
    ['a Decimal without fraction', 'a;t=1.'],
    ['an unterminated String', '"abc'],
    ['a bad escape', '"a\\n"'],
    ['a non-ASCII String', '"café"'],
    ['a control character', '"a\u0001"'],
    ['a Byte Sequence with bad base64', 'a;pk=:*:'],
    ['an unterminated Byte Sequence', 'a;pk=:AQI='],
    ['a bad Boolean', 'a;x=?2'],
    ['a Date that is a Decimal', 'a;d=@1.5'],
    ['an uppercase Display String escape', '%"%C3%A9"'],
    ['a Display String of invalid UTF-8', '%"%ff"'],
    ['junk after an Item', 'a b'],
    ['a leading tab', '\ta'],
    ['an unclosed Inner List', '(a b'],
    ['a leading digit-less minus', '-'],
  ])('ignores the whole field with %s', (_, value) => {
    expect(parseStructuredList(value)).toBeUndefined();
  });

  it('never throws, whatever the string', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 80 }), (s) => {
        const list = parseStructuredList(s);
        expect(list === undefined || Array.isArray(list)).toBe(true);
      }),
      { numRuns: 1000 },
    );
    // Strings close to the grammar reach deeper into the parser than random text.
    const near = fc
      .array(fc.constantFrom(...'"\\:;=,?@%()* -.0123456789aZ/+'.split('')), { maxLength: 40 })
      .map((chars) => chars.join(''));
    fc.assert(
      fc.property(near, (s) => {
        expect(() => parseStructuredList(s)).not.toThrow();
      }),
      { numRuns: 3000 },
    );
  });
});

// A serializer for the round-trip property (RFC 9651 §4.1, the subset generated).
function serialize(item: BareItem): string {
  switch (item.type) {
    case 'integer':
      return String(item.value);
    case 'decimal':
      return Number.isInteger(item.value) ? `${item.value}.0` : String(item.value);
    case 'string':
      return `"${item.value.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
    case 'token':
      return item.value;
    case 'boolean':
      return item.value ? '?1' : '?0';
    case 'bytes':
      return `:${btoa(String.fromCharCode(...item.value))}:`;
    default:
      throw new Error(`not generated: ${item.type}`);
  }
}

const printable = fc
  .array(fc.integer({ min: 0x20, max: 0x7e }), { maxLength: 12 })
  .map((codes) => String.fromCharCode(...codes));
const token = fc
  .tuple(fc.constantFrom('a', 'Z', '*'), fc.stringMatching(/^[a-zA-Z0-9!#$%&'*+.^_`|~:/-]{0,8}$/))
  .map(([head, tail]) => head + tail);
const bareItem: fc.Arbitrary<BareItem> = fc.oneof(
  fc
    .integer({ min: -1e15 + 1, max: 1e15 - 1 })
    .map((value) => ({ type: 'integer', value }) as const),
  fc
    .integer({ min: -1e12 + 1, max: 1e12 - 1 })
    .chain((whole) =>
      fc
        .integer({ min: 0, max: 999 })
        .map((milli) => Number(`${whole}.${String(milli).padStart(3, '0')}`)),
    )
    .map((value) => ({ type: 'decimal', value }) as const),
  printable.map((value) => ({ type: 'string', value }) as const),
  token.map((value) => ({ type: 'token', value }) as const),
  fc.boolean().map((value) => ({ type: 'boolean', value }) as const),
  fc.uint8Array({ maxLength: 10 }).map((value) => ({ type: 'bytes', value }) as const),
);
const key = fc.stringMatching(/^[a-z*][a-z0-9_.*-]{0,5}$/);
const member = fc.record({
  item: fc.oneof(
    printable.map((value) => ({ type: 'string', value }) as const),
    token.map((value) => ({ type: 'token', value }) as const),
  ),
  params: fc.uniqueArray(fc.tuple(key, bareItem), { selector: ([k]) => k, maxLength: 5 }),
});

describe('parseStructuredList: round trip', () => {
  it('reads back the values of a generated valid List', () => {
    fc.assert(
      fc.property(
        fc.array(member, { maxLength: 4 }),
        fc.constantFrom(',', ', ', ' ,\t'),
        (members, sep) => {
          const text = members
            .map(
              (m) => serialize(m.item) + m.params.map(([k, v]) => `;${k}=${serialize(v)}`).join(''),
            )
            .join(sep);
          const back = parseStructuredList(text);
          expect(back?.map((m) => ({ item: m.item, params: [...m.params] }))).toEqual(
            members.map((m) => ({
              item: m.item,
              // -0 serializes as 0: compare what the wire can carry.
              params: m.params.map(([k, v]) => [
                k,
                v.type === 'decimal' || v.type === 'integer' ? { ...v, value: v.value + 0 } : v,
              ]),
            })),
          );
        },
      ),
      { numRuns: 1000 },
    );
  });
});
