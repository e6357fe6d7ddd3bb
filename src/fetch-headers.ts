/**
 * The headers of a fetch init, read and written whatever form the caller
 * gave them (a `Headers`, an array of pairs, a record), for the fetch
 * adapter: a header's value, its presence, a copy with one set, the pairs.
 */

/** Any form `RequestInit.headers` takes. */
export type HeadersLike = RequestInit['headers'];

/** The value of header `name` (any case), or `undefined`. */
export function headerValue(headers: HeadersLike | undefined, name: string): string | undefined {
  if (headers === undefined) return undefined;
  const lower = name.toLowerCase();
  if (typeof (headers as Headers).get === 'function') {
    return (headers as Headers).get(lower) ?? undefined;
  }
  for (const [n, v] of headerPairs(headers)) if (n.toLowerCase() === lower) return v;
  return undefined;
}

/** Whether header `name` (any case) is set. */
export function hasHeader(headers: HeadersLike | undefined, name: string): boolean {
  if (headers === undefined) return false;
  const lower = name.toLowerCase();
  if (typeof (headers as Headers).has === 'function') return (headers as Headers).has(lower);
  if (Array.isArray(headers)) return headers.some(([n]) => n?.toLowerCase() === lower);
  return Object.keys(headers).some((n) => n.toLowerCase() === lower);
}

/** A copy of `headers` as pairs, with `name` set to `value` (the caller's headers stay as they are). */
export function withHeader(
  headers: HeadersLike | undefined,
  name: string,
  value: string,
): [string, string][] {
  const h = new Headers(headers);
  h.set(name, value);
  return [...h];
}

/** The `[name, value]` pairs of `headers`, without copying them. */
export function headerPairs(headers: HeadersLike | undefined): Iterable<readonly [string, string]> {
  if (headers === undefined) return [];
  if (Array.isArray(headers)) return headers as [string, string][];
  if (typeof (headers as Headers).entries === 'function') return (headers as Headers).entries();
  return Object.entries(headers as Record<string, string>);
}
