/**
 * Request headers in the shapes undici's dispatch options take them: a
 * record, a flat `[name, value, name, value…]` array, an iterable of pairs,
 * or `null`; and response headers as undici reads them, raw.
 */
import type { Dispatcher } from 'undici';
import { isQuotaHeader, quotaNameLength } from '../retry/server-delay.js';

type DispatchHeaders = Dispatcher.DispatchOptions['headers'];

/** The headers as `[name, value]` pairs (array values expanded). */
export function* headerPairs(headers: DispatchHeaders): Generator<[string, string]> {
  if (headers === undefined || headers === null) return;
  if (Array.isArray(headers)) {
    const flat = headers as unknown[];
    if (flat.length > 0 && !Array.isArray(flat[0])) {
      for (let i = 0; i + 1 < flat.length; i += 2) yield [String(flat[i]), String(flat[i + 1])];
      return;
    }
  }
  const entries =
    typeof (headers as Iterable<unknown>)[Symbol.iterator] === 'function'
      ? (headers as Iterable<[string, unknown]>)
      : Object.entries(headers as Record<string, unknown>);
  for (const [name, value] of entries) {
    if (value === undefined || value === null) continue;
    if (Array.isArray(value)) for (const v of value) yield [name, String(v)];
    else yield [name, String(value)];
  }
}

/** Does a header of this (lower-case) name exist? */
export function hasHeader(headers: DispatchHeaders, lower: string): boolean {
  if (headers === undefined || headers === null) return false;
  if (
    !Array.isArray(headers) &&
    typeof (headers as Iterable<unknown>)[Symbol.iterator] !== 'function'
  ) {
    for (const name of Object.keys(headers)) {
      if (name.length === lower.length && name.toLowerCase() === lower) return true;
    }
    return false;
  }
  for (const [name] of headerPairs(headers)) if (name.toLowerCase() === lower) return true;
  return false;
}

/** The headers with `name` set to `value` (earlier values of it removed), as a flat array. */
export function withHeader(headers: DispatchHeaders, name: string, value: string): string[] {
  const lower = name.toLowerCase();
  const out: string[] = [];
  for (const [n, v] of headerPairs(headers)) if (n.toLowerCase() !== lower) out.push(n, v);
  out.push(name, value);
  return out;
}

/**
 * One header (`name` in lower case) of a response's raw headers, without
 * parsing them all; repeated ones joined with `, `, as `readHeader`
 * (server-delay.ts) does for a record.
 */
export function rawHeader(raw: Buffer[] | undefined, name: string): string | undefined {
  let found: string | undefined;
  for (let i = 0; raw !== undefined && i + 1 < raw.length; i += 2) {
    const key = raw[i]!;
    if (key.length !== name.length || key.toString('latin1').toLowerCase() !== name) continue;
    const v = raw[i + 1] as Buffer | Buffer[] | string;
    const value =
      typeof v === 'string'
        ? v
        : Array.isArray(v)
          ? v.map((x) => x.toString('latin1')).join(', ')
          : v.toString('latin1');
    found = found === undefined ? value : `${found}, ${value}`;
  }
  return found;
}

/** Whether raw response headers carry a quota header (server-delay.ts): one pass. */
export function rawHasQuota(raw: Buffer[] | undefined): boolean {
  for (let i = 0; raw !== undefined && i < raw.length; i += 2) {
    const name = raw[i]!;
    if (quotaNameLength(name.length) && isQuotaHeader(name.toString('latin1'))) return true;
  }
  return false;
}
