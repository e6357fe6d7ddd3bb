/**
 * The SSRF guard: refuses connections to addresses that are not public
 * unicast (loopback, private, link-local such as 169.254.169.254, unique
 * local, CGNAT, unspecified, NAT64, IPv4-mapped and IPv4-compatible forms of
 * those…), using ipaddr.js `process()` (IPv4-mapped IPv6 → IPv4) and
 * `range() === 'unicast'`.
 *
 * It checks the address a socket actually connects to: the answers of the
 * very lookup `net.connect` uses are filtered (no second resolution that a
 * rebinding DNS could answer differently), IP literals (which skip `lookup`)
 * are checked before connecting, and the socket's `remoteAddress` is checked
 * again once connected, before a byte of the request is written.
 */
import type { LookupAddress, LookupOptions } from 'node:dns';
import type { LookupFunction, Socket } from 'node:net';
import ipaddr from 'ipaddr.js';
import type { buildConnector } from 'undici';
import { SsrfBlockedError } from '../errors.js';
import { describe } from '../internal/validate.js';

/** Allow and deny lists of the SSRF guard. Deny wins over allow. */
export interface SsrfOptions {
  /**
   * Destinations allowed although not public, for tests and internal
   * services: a CIDR range (`'10.0.0.0/8'`), an IP (`'10.1.2.3'`,
   * `'[fd00::1]:8443'`), or a host name as written in URLs (`'api.internal'`,
   * `'api.internal:8443'`, `'*.svc.cluster.local'`), with an optional port.
   * @default []
   */
  allow?: readonly string[];
  /** Destinations refused although public, in the same forms. @default [] */
  deny?: readonly string[];
}

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/** One allow or deny entry. */
type Rule =
  | { kind: 'range'; range: [Address, number]; port: number | undefined }
  | { kind: 'host'; host: string; suffix: boolean; port: number | undefined };

/** @internal The resolved lists. */
export interface SsrfRules {
  readonly allow: readonly Rule[];
  readonly deny: readonly Rule[];
}

const HOST = /^(\*\.)?([a-z0-9_-]+(?:\.[a-z0-9_-]+)*)\.?$/i;

/** `::/96` (IPv4-compatible IPv6, deprecated): ipaddr.js calls it unicast. */
const V4_COMPATIBLE = ipaddr.parseCIDR('::/96');

function parsePort(text: string): number | undefined {
  if (!/^\d{1,5}$/.test(text)) return undefined;
  const port = Number(text);
  return port >= 1 && port <= 65_535 ? port : undefined;
}

function parseRule(entry: unknown, path: string): Rule {
  const bad = () =>
    new TypeError(
      `${path} must be a CIDR range, an IP address or a host name, with an optional :port, got ${describe(entry)}`,
    );
  if (typeof entry !== 'string' || entry === '') throw bad();
  let text = entry.trim();
  let port: number | undefined;
  // "[v6]" or "[v6]:port"
  const bracket = /^\[([^\]]+)\](?::(\d+))?$/.exec(text);
  if (bracket !== null) {
    if (bracket[2] !== undefined) {
      port = parsePort(bracket[2]);
      if (port === undefined) throw bad();
    }
    text = bracket[1]!;
    if (!ipaddr.IPv6.isValid(text)) throw bad();
    return { kind: 'range', range: [ipaddr.process(text), exact(ipaddr.process(text))], port };
  }
  if (text.includes('/')) {
    if (!ipaddr.isValidCIDR(text)) throw bad();
    const [address, bits] = ipaddr.parseCIDR(text);
    // An IPv4-mapped range ('::ffff:10.0.0.0/104') compares as IPv4, as addresses are processed.
    if (address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96) {
      return {
        kind: 'range',
        range: [(address as ipaddr.IPv6).toIPv4Address(), bits - 96],
        port: undefined,
      };
    }
    return { kind: 'range', range: [address, bits], port: undefined };
  }
  if (ipaddr.IPv6.isValid(text)) {
    const address = ipaddr.process(text);
    return { kind: 'range', range: [address, exact(address)], port: undefined };
  }
  const colon = text.lastIndexOf(':');
  if (colon !== -1) {
    port = parsePort(text.slice(colon + 1));
    if (port === undefined) throw bad();
    text = text.slice(0, colon);
  }
  if (ipaddr.IPv4.isValidFourPartDecimal(text)) {
    const address = ipaddr.process(text);
    return { kind: 'range', range: [address, 32], port };
  }
  const host = HOST.exec(text);
  if (host === null) throw bad();
  return { kind: 'host', host: host[2]!.toLowerCase(), suffix: host[1] !== undefined, port };
}

function exact(address: Address): number {
  return address.kind() === 'ipv4' ? 32 : 128;
}

function parseList(value: unknown, path: string): Rule[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) {
    throw new TypeError(`${path} must be an array of strings, got ${describe(value)}`);
  }
  return value.map((entry, i) => parseRule(entry, `${path}[${i}]`));
}

/** Resolves `ssrf`: `false`/absent → off, `true` → on with no lists. */
export function resolveSsrfOptions(input: unknown, path: string): SsrfRules | undefined {
  if (input === undefined || input === false) return undefined;
  if (input === true) return Object.freeze({ allow: [], deny: [] });
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new TypeError(
      `${path} must be a boolean or an object { allow, deny }, got ${describe(input)}`,
    );
  }
  for (const key of Object.keys(input)) {
    if (key !== 'allow' && key !== 'deny') {
      throw new TypeError(`${path}.${key} is not an option (expected one of: allow, deny)`);
    }
  }
  const o = input as SsrfOptions;
  return Object.freeze({
    allow: Object.freeze(parseList(o.allow, `${path}.allow`)),
    deny: Object.freeze(parseList(o.deny, `${path}.deny`)),
  });
}

/** A host name as rules compare it: lower case, no brackets, no trailing dot. */
function normalizeHost(host: string): string {
  let h = host.toLowerCase();
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  if (h.endsWith('.')) h = h.slice(0, -1);
  return h;
}

/**
 * Does `rule` match? An unknown `port` (DNS answers are filtered before the
 * port is known) matches a rule with a port: the exact check happens again
 * on the connected socket, where the port is known.
 */
function matches(rule: Rule, host: string, port: number | undefined, address: Address): boolean {
  if (rule.port !== undefined && port !== undefined && rule.port !== port) return false;
  if (rule.kind === 'host') {
    return rule.suffix ? host.endsWith(`.${rule.host}`) : host === rule.host;
  }
  const [base, bits] = rule.range;
  return address.kind() === base.kind() && address.match(base, bits);
}

/**
 * Why the guard refuses `address` (reached for `host`, on `port` if known),
 * or `undefined` if it may be connected to.
 */
export function refusal(
  rules: SsrfRules,
  host: string,
  port: number | undefined,
  address: string,
): string | undefined {
  const h = normalizeHost(host);
  let parsed: Address;
  try {
    parsed = ipaddr.process(normalizeHost(address));
  } catch {
    return 'not an IP address';
  }
  const exactPort = (rule: Rule) => rule.port === undefined || port !== undefined;
  if (rules.deny.some((rule) => exactPort(rule) && matches(rule, h, port, parsed)))
    return 'deny list';
  if (rules.allow.some((rule) => matches(rule, h, port, parsed))) return undefined;
  const range = parsed.range();
  if (range !== 'unicast') return range;
  if (parsed.kind() === 'ipv6' && parsed.match(V4_COMPATIBLE)) return 'ipv4Compatible';
  return undefined;
}

function blocked(host: string, port: number | undefined, address: string, why: string) {
  const where = port === undefined ? host : `${host}:${port}`;
  return new SsrfBlockedError(
    `SSRF guard refused ${address} (${why}) for ${where}; allow it with ssrf.allow`,
  );
}

/** The host and port being connected to, while the connector runs (see guardLookup). */
let connecting: { host: string; port: number } | undefined;

/**
 * Wraps a lookup so that its answers are filtered by the guard. With
 * `{ all: true }` (happy eyeballs), refused addresses are left out and the
 * rest kept; when nothing is left, the lookup fails with `SsrfBlockedError`.
 */
export function guardLookup(rules: SsrfRules, inner: LookupFunction): LookupFunction {
  return (hostname, options, callback) => {
    // net.connect calls lookup synchronously from within the connector: the
    // port is known then. (Called later, the port stays unknown here and the
    // connected socket is checked with it.)
    const port = connecting?.host === hostname ? connecting.port : undefined;
    inner(hostname, options as LookupOptions, (error, address, family) => {
      if (error) {
        callback(error, address, family);
        return;
      }
      if (Array.isArray(address)) {
        let why: string | undefined;
        const kept = (address as LookupAddress[]).filter((entry) => {
          const reason = refusal(rules, hostname, port, entry.address);
          why ??= reason;
          return reason === undefined;
        });
        if (kept.length === 0) {
          const first = (address as LookupAddress[])[0]?.address ?? '(no address)';
          callback(blocked(hostname, port, first, why ?? 'no address'), []);
        } else {
          callback(null, kept);
        }
        return;
      }
      const why = refusal(rules, hostname, port, address as string);
      if (why !== undefined) callback(blocked(hostname, port, address as string, why), '');
      else callback(null, address, family);
    });
  };
}

/**
 * Wraps an undici connector: IP literals are checked before connecting
 * (they never go through `lookup`), and every socket's `remoteAddress` once
 * connected, before undici writes to it.
 */
export function guardConnector(
  rules: SsrfRules,
  inner: buildConnector.connector,
): buildConnector.connector {
  return (options, callback) => {
    const host = options.hostname;
    const port = Number(options.port) || (options.protocol === 'https:' ? 443 : 80);
    if (ipaddr.isValid(normalizeHost(host))) {
      const why = refusal(rules, host, port, host);
      if (why !== undefined) {
        queueMicrotask(() => callback(blocked(host, port, host, why), null));
        return;
      }
    }
    let done = false;
    let early: SsrfBlockedError | undefined;
    const check = (socket: Socket): SsrfBlockedError | undefined => {
      const address = socket.remoteAddress;
      const why = address === undefined ? 'no address' : refusal(rules, host, port, address);
      return why === undefined ? undefined : blocked(host, port, address ?? '?', why);
    };
    const outer = connecting;
    connecting = { host, port };
    let socket: Socket | undefined;
    try {
      socket = inner(options, (error, connected) => {
        if (done) return;
        done = true;
        if (error !== null || connected === null) {
          callback(error ?? new Error('connect failed'), null);
          return;
        }
        const refused = early ?? check(connected);
        if (refused !== undefined) {
          connected.destroy(refused);
          callback(refused, null);
          return;
        }
        callback(null, connected);
      }) as unknown as Socket | undefined;
    } finally {
      connecting = outer;
    }
    // Refuse as soon as TCP connects, before a TLS ClientHello leaves.
    const raw = socket;
    raw?.prependOnceListener?.('connect', () => {
      early = check(raw);
      if (early !== undefined) raw.destroy(early);
    });
  };
}
