/**
 * What a faulty transport or server answers, request by request: the steps
 * of a script, then seeded chance. One module for the fetch, the Dispatcher
 * and the server, so the three read the same script the same way.
 */
import { checkNumber, checkObject, describe } from '../internal/validate.js';

/**
 * A fault without a response:
 * - `'pass'`: no fault; the wrapped transport (or handler) answers, else a `200`;
 * - `'refuse'`: the connection is refused before anything is sent (`ECONNREFUSED`);
 * - `'reset'`: the connection is reset after the request was sent, before any response (`ECONNRESET`);
 * - `'stall'`: nothing ever comes back (until the caller aborts).
 */
export type FaultName = 'pass' | 'refuse' | 'reset' | 'stall';

/** A response, and how it is delivered. Every field is optional. */
export interface ResponseStep {
  /** @default 200 */
  status?: number;
  /** Response headers. @default {} */
  headers?: Readonly<Record<string, string>>;
  /** The body, UTF-8. @default '' */
  body?: string;
  /** Sets `Retry-After`: seconds (a number) or an HTTP-date (a string). */
  retryAfter?: number | string;
  /** ms before the response head is sent: a slow first byte. @default 0 */
  delay?: number;
  /** ms between two body chunks of `chunk` bytes: a body that drips. @default 0 (the body at once) */
  drip?: number;
  /** Bytes per chunk when `drip` is set. @default 1 */
  chunk?: number;
  /** Bytes of the body sent before the connection is cut (`Content-Length` keeps the full length). */
  truncate?: number;
}

/** One step of a script: a status (`503`), a fault's name, or a response. */
export type Step = number | FaultName | ResponseStep;

/** A step drawn with a probability. */
export interface ChanceFault {
  step: Step;
  /** In [0, 1]; the probabilities of one `chance` add up to at most 1. */
  probability: number;
}

/** Where the steps come from. */
export interface ScriptOptions {
  /** Steps taken one per request, in order. @default [] */
  script?: readonly Step[];
  /** The step of every request after the script, unless `chance` is set. @default 'pass' */
  after?: Step;
  /**
   * After the script, each request draws one number from a generator seeded
   * with `seed` and takes the fault it falls on, else `'pass'`: the same seed
   * gives the same faults in the same order.
   */
  chance?: { seed: number; faults: readonly ChanceFault[] };
}

/** A step, resolved: what to do, and the response if there is one. */
export type Plan =
  | { readonly kind: FaultName }
  | {
      readonly kind: 'respond';
      readonly status: number;
      readonly headers: readonly (readonly [string, string])[];
      readonly body: Uint8Array;
      readonly delay: number;
      readonly drip: number;
      readonly chunk: number;
      readonly truncate: number | undefined;
    };

/** A header name: an RFC 9110 token. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const NAMES: readonly FaultName[] = ['pass', 'refuse', 'reset', 'stall'];
const RESPONSE_KEYS = [
  'status',
  'headers',
  'body',
  'retryAfter',
  'delay',
  'drip',
  'chunk',
  'truncate',
] as const;

/** Resolves one step; `path` names it in errors (`script[2]`). */
export function resolveStep(path: string, step: unknown): Plan {
  if (typeof step === 'number') return resolveStep(path, { status: step });
  if (typeof step === 'string') {
    if ((NAMES as readonly string[]).includes(step)) return { kind: step as FaultName };
    throw new TypeError(
      `${path} must be a status, one of ${NAMES.map((n) => `'${n}'`).join(', ')} or a response, got ${describe(step)}`,
    );
  }
  const o = checkObject(path, step, RESPONSE_KEYS);
  const status = o.status === undefined ? 200 : o.status;
  checkNumber(`${path}.status`, status, { min: 200, max: 599, integer: true });
  const headers: [string, string][] = [];
  if (o.headers !== undefined) {
    const h = checkObject(`${path}.headers`, o.headers, Object.keys(o.headers as object));
    for (const [name, value] of Object.entries(h)) {
      // RFC 9110 §5.1 (a name is a token), §5.5 (no CR, LF or NUL in a value): else the
      // server's writeHead or the Response constructor would fail far from the script.
      if (!TOKEN.test(name)) {
        throw new TypeError(`${path}.headers: ${describe(name)} is not a header name`);
      }
      if (typeof value !== 'string' || /[\r\n\0]/.test(value)) {
        throw new TypeError(
          `${path}.headers.${name} must be a string without CR, LF or NUL, got ${describe(value)}`,
        );
      }
      headers.push([name.toLowerCase(), value]);
    }
  }
  if (o.retryAfter !== undefined) {
    if (typeof o.retryAfter === 'number') {
      checkNumber(`${path}.retryAfter`, o.retryAfter, { min: 0, integer: true });
    } else if (typeof o.retryAfter !== 'string') {
      throw new TypeError(
        `${path}.retryAfter must be seconds or an HTTP-date, got ${describe(o.retryAfter)}`,
      );
    }
    headers.push(['retry-after', String(o.retryAfter)]);
  }
  if (o.body !== undefined && typeof o.body !== 'string') {
    throw new TypeError(`${path}.body must be a string, got ${describe(o.body)}`);
  }
  const body = new TextEncoder().encode(o.body === undefined ? '' : (o.body as string));
  const ms = (key: 'delay' | 'drip', value: unknown) =>
    value === undefined ? 0 : checkNumber(`${path}.${key}`, value, { min: 0 });
  const truncate =
    o.truncate === undefined
      ? undefined
      : checkNumber(`${path}.truncate`, o.truncate, { min: 0, integer: true });
  if (truncate !== undefined && truncate >= body.length) {
    throw new RangeError(
      `${path}.truncate must be less than the body's ${body.length} bytes, got ${truncate}`,
    );
  }
  return {
    kind: 'respond',
    status: status as number,
    headers,
    body,
    delay: ms('delay', o.delay),
    drip: ms('drip', o.drip),
    chunk:
      o.chunk === undefined ? 1 : checkNumber(`${path}.chunk`, o.chunk, { min: 1, integer: true }),
    truncate,
  };
}

/** The label a request's step is counted under: the fault's name, or the response's status. */
export function label(plan: Plan): FaultName | number {
  return plan.kind === 'respond' ? plan.status : plan.kind;
}

/**
 * A small seeded generator (mulberry32): uniform numbers in [0, 1), the
 * same sequence for the same seed on every runtime.
 */
export function seededRandom(seed: number): () => number {
  let state = checkNumber('seed', seed, { integer: true }) >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** The keys of {@link ScriptOptions}, for the transports' own option checks. */
export const SCRIPT_KEYS: readonly string[] = ['script', 'after', 'chance'];

/**
 * Resolves the script once (options already checked against the caller's
 * keys); returns the function that gives each request its step.
 */
export function createScript(options: ScriptOptions): () => Plan {
  const o = options as Record<string, unknown>;
  if (o.script !== undefined && !Array.isArray(o.script)) {
    throw new TypeError(`script must be an array of steps, got ${describe(o.script)}`);
  }
  const script = ((o.script ?? []) as unknown[]).map((s, i) => resolveStep(`script[${i}]`, s));
  const fallback = resolveStep('after', o.after ?? 'pass');
  const after = o.chance === undefined ? () => fallback : chance(o.chance);
  let next = 0;
  return () => (next < script.length ? script[next++]! : after());
}

function chance(value: unknown): () => Plan {
  const c = checkObject('chance', value, ['seed', 'faults']);
  if (!Array.isArray(c.faults)) {
    throw new TypeError(`chance.faults must be an array, got ${describe(c.faults)}`);
  }
  const random = seededRandom(c.seed as number);
  let total = 0;
  const table = (c.faults as unknown[]).map((f, i) => {
    const entry = checkObject(`chance.faults[${i}]`, f, ['step', 'probability']);
    const p = entry.probability;
    if (typeof p !== 'number' || Number.isNaN(p)) {
      throw new TypeError(`chance.faults[${i}].probability must be a number, got ${describe(p)}`);
    }
    if (!(p >= 0 && p <= 1)) {
      throw new RangeError(`chance.faults[${i}].probability must be in [0, 1], got ${describe(p)}`);
    }
    total += p;
    return { plan: resolveStep(`chance.faults[${i}].step`, entry.step), upTo: total };
  });
  if (total > 1 + 1e-9) {
    throw new RangeError(`chance.faults' probabilities must add up to at most 1, got ${total}`);
  }
  const pass: Plan = { kind: 'pass' };
  return () => {
    const x = random();
    return table.find((t) => x < t.upTo)?.plan ?? pass;
  };
}
