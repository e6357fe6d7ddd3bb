/**
 * OpenTelemetry HTTP client semantic conventions, as staunch fills them:
 * the method (known methods kept, others as `_OTHER`), the server's address
 * and port from the (already redacted) URL, the error type, and the W3C
 * `traceparent` of a span.
 * @see https://opentelemetry.io/docs/specs/semconv/http/http-spans/
 */
import { isSpanContextValid, type SpanContext } from '@opentelemetry/api';

/** Attribute values, as OpenTelemetry takes them. */
export type Attributes = Record<string, string | number | boolean>;

// semconv: http.request.method is one of these, or `_OTHER` with the original alongside.
const KNOWN_METHODS: ReadonlySet<string> = new Set([
  'CONNECT',
  'DELETE',
  'GET',
  'HEAD',
  'OPTIONS',
  'PATCH',
  'POST',
  'PUT',
  'QUERY',
  'TRACE',
]);

const DEFAULT_PORTS: Readonly<Record<string, number>> = { 'http:': 80, 'https:': 443 };

/** `http.request.method`, `url.full`, `server.address`, `server.port` of a request. */
export function requestAttributes(method: string, url: string): Attributes {
  const attributes: Attributes = {};
  if (KNOWN_METHODS.has(method)) attributes['http.request.method'] = method;
  else {
    attributes['http.request.method'] = '_OTHER';
    attributes['http.request.method_original'] = method;
  }
  attributes['url.full'] = url;
  try {
    const parsed = new URL(url);
    // URL keeps the brackets of an IPv6 host; semconv wants the bare address.
    attributes['server.address'] = parsed.hostname.replace(/^\[(.*)\]$/, '$1');
    const port = parsed.port === '' ? DEFAULT_PORTS[parsed.protocol] : Number(parsed.port);
    if (port !== undefined) attributes['server.port'] = port;
  } catch {
    // Not a URL the runtime can parse: the request fails on its own; url.full says what it was.
  }
  return attributes;
}

/** The span name semconv asks for when there is no route template: the method, or `HTTP`. */
export function spanName(method: string): string {
  return KNOWN_METHODS.has(method) ? method : 'HTTP';
}

/**
 * `error.type` of an outcome: the status code for a 4xx/5xx (semconv), the
 * error's code (`ECONNRESET`, `STAUNCH_DEADLINE`…) for a failure without a
 * response, else `_OTHER`.
 */
export function errorType(
  status: number | undefined,
  code: string | undefined,
): string | undefined {
  if (status !== undefined) return status >= 400 ? String(status) : undefined;
  return code ?? '_OTHER';
}

/** The W3C `traceparent` of a span context, or `undefined` for an invalid one. @see https://www.w3.org/TR/trace-context/#traceparent-header */
export function traceparent(context: SpanContext): string | undefined {
  if (!isSpanContextValid(context)) return undefined;
  const flags = (context.traceFlags & 0xff).toString(16).padStart(2, '0');
  return `00-${context.traceId}-${context.spanId}-${flags}`;
}
