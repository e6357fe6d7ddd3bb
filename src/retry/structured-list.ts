/**
 * A strict parser of RFC 9651 structured-field Lists: the syntax of the
 * `RateLimit` and `RateLimit-Policy` fields. A field that does not parse is
 * ignored whole (`undefined`), as RFC 9651 §4.2 requires of a recipient:
 * never a guess at a half-read field, never a throw.
 *
 * @see https://www.rfc-editor.org/rfc/rfc9651#section-4.2
 */

/** A Bare Item of RFC 9651 §3.3, tagged with its type so none is read as another. */
export type BareItem =
  | { type: 'integer'; value: number }
  | { type: 'decimal'; value: number }
  | { type: 'string'; value: string }
  | { type: 'token'; value: string }
  | { type: 'bytes'; value: Uint8Array }
  | { type: 'boolean'; value: boolean }
  | { type: 'date'; value: number }
  | { type: 'display'; value: string };

/** An Item (§3.3) or an Inner List (§3.1.1), with its Parameters (§3.1.2). */
export interface ListMember {
  /** An Item's value; absent for an Inner List (its items are not kept). */
  item?: BareItem;
  /** Parameters by key; a repeated key keeps its last value (§4.2.3.2). */
  params: ReadonlyMap<string, BareItem>;
}

class Malformed extends Error {}

const KEY_START = /[a-z*]/;
const KEY_CHAR = /[a-z0-9_\-.*]/;
const TOKEN_START = /[A-Za-z*]/;
// tchar (RFC 9110 §5.6.2) plus ':' and '/'.
const TOKEN_CHAR = /[!#$%&'*+\-.^_`|~0-9A-Za-z:/]/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** Cursor over one field value; every `parse*` throws {@link Malformed} on bad input. */
class Reader {
  pos = 0;
  constructor(readonly text: string) {}

  peek(): string {
    return this.text.charAt(this.pos);
  }

  done(): boolean {
    return this.pos >= this.text.length;
  }

  skip(chars: string): void {
    while (!this.done() && chars.includes(this.peek())) this.pos++;
  }

  expect(char: string): void {
    if (this.peek() !== char) throw new Malformed();
    this.pos++;
  }

  member(): ListMember {
    if (this.peek() === '(') {
      this.innerList();
      return { params: this.params() };
    }
    const item = this.bareItem();
    return { item, params: this.params() };
  }

  /** §4.2.1.2: read to skip; what an Inner List holds is of no use to these fields. */
  innerList(): void {
    this.expect('(');
    for (;;) {
      this.skip(' ');
      if (this.peek() === ')') {
        this.pos++;
        return;
      }
      this.bareItem();
      this.params();
      const c = this.peek();
      if (c !== ' ' && c !== ')') throw new Malformed();
    }
  }

  params(): Map<string, BareItem> {
    const params = new Map<string, BareItem>();
    while (this.peek() === ';') {
      this.pos++;
      this.skip(' ');
      const key = this.key();
      let value: BareItem = { type: 'boolean', value: true };
      if (this.peek() === '=') {
        this.pos++;
        value = this.bareItem();
      }
      // Delete first so a repeated key takes the later position too, as §4.2.3.2 orders it.
      params.delete(key);
      params.set(key, value);
    }
    return params;
  }

  key(): string {
    const start = this.pos;
    if (!KEY_START.test(this.peek())) throw new Malformed();
    this.pos++;
    while (!this.done() && KEY_CHAR.test(this.peek())) this.pos++;
    return this.text.slice(start, this.pos);
  }

  bareItem(): BareItem {
    const c = this.peek();
    if (c === '-' || (c >= '0' && c <= '9')) return this.number();
    if (c === '"') return { type: 'string', value: this.string() };
    if (c === ':') return { type: 'bytes', value: this.bytes() };
    if (c === '?') return { type: 'boolean', value: this.boolean() };
    if (c === '@') {
      this.pos++;
      const n = this.number();
      if (n.type !== 'integer') throw new Malformed();
      return { type: 'date', value: n.value };
    }
    if (c === '%') return { type: 'display', value: this.display() };
    if (TOKEN_START.test(c)) return { type: 'token', value: this.token() };
    throw new Malformed();
  }

  /** §4.2.4: at most 15 integer digits; a Decimal has at most 12 and 1 to 3 fractional. */
  number(): BareItem {
    const m = /^(-?)(\d{1,15})(?:\.(\d{1,3}))?/.exec(this.text.slice(this.pos, this.pos + 21));
    if (!m) throw new Malformed();
    this.pos += m[0].length;
    const [, sign, whole, fraction] = m;
    const next = this.peek();
    // A digit or '.' left over means too many digits, or a Decimal without a fraction.
    if (next === '.' || (next >= '0' && next <= '9')) throw new Malformed();
    if (fraction === undefined) return { type: 'integer', value: Number(sign! + whole!) };
    if (whole!.length > 12) throw new Malformed();
    return { type: 'decimal', value: Number(`${sign!}${whole!}.${fraction}`) };
  }

  string(): string {
    this.expect('"');
    let out = '';
    for (;;) {
      if (this.done()) throw new Malformed();
      const c = this.text.charAt(this.pos++);
      if (c === '"') return out;
      if (c === '\\') {
        const e = this.text.charAt(this.pos++);
        if (e !== '"' && e !== '\\') throw new Malformed();
        out += e;
      } else if (c < ' ' || c > '~') throw new Malformed();
      else out += c;
    }
  }

  token(): string {
    const start = this.pos;
    this.pos++;
    while (!this.done() && TOKEN_CHAR.test(this.peek())) this.pos++;
    return this.text.slice(start, this.pos);
  }

  bytes(): Uint8Array {
    this.expect(':');
    const end = this.text.indexOf(':', this.pos);
    if (end < 0) throw new Malformed();
    const b64 = this.text.slice(this.pos, end);
    this.pos = end + 1;
    if (!BASE64.test(b64) || b64.length % 4 === 1) throw new Malformed();
    const binary = atob(b64);
    const out = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
    return out;
  }

  boolean(): boolean {
    this.expect('?');
    const c = this.text.charAt(this.pos++);
    if (c === '1') return true;
    if (c === '0') return false;
    throw new Malformed();
  }

  /** §4.2.10: `%"…"` with lowercase %xx escapes of UTF-8 bytes. */
  display(): string {
    this.expect('%');
    this.expect('"');
    const bytes: number[] = [];
    for (;;) {
      if (this.done()) throw new Malformed();
      const c = this.text.charAt(this.pos++);
      if (c === '"') break;
      if (c === '%') {
        const hex = this.text.slice(this.pos, this.pos + 2);
        if (!/^[0-9a-f]{2}$/.test(hex)) throw new Malformed();
        bytes.push(parseInt(hex, 16));
        this.pos += 2;
      } else if (c < ' ' || c > '~') throw new Malformed();
      else bytes.push(c.charCodeAt(0));
    }
    try {
      return UTF8.decode(new Uint8Array(bytes));
    } catch {
      throw new Malformed();
    }
  }
}

/**
 * Parses a field value as an RFC 9651 List (§4.2.1), or `undefined` when it
 * is malformed anywhere. An empty value is an empty List. Never throws.
 */
export function parseStructuredList(value: string): ListMember[] | undefined {
  const reader = new Reader(value);
  const members: ListMember[] = [];
  try {
    reader.skip(' ');
    while (!reader.done()) {
      members.push(reader.member());
      reader.skip(' \t');
      if (reader.done()) break;
      reader.expect(',');
      reader.skip(' \t');
      // A trailing comma is malformed (§4.2.1).
      if (reader.done()) throw new Malformed();
    }
    return members;
  } catch {
    // Malformed, or anything atob would refuse: a field is read whole or not at all.
    return undefined;
  }
}
