/**
 * The variants of bench/undici-overhead.mjs, each set up in its own process
 * by bench/variant-child.mjs. `setup(name, url)` returns `send()`: one GET,
 * body read, resolving to the status. The build measured is dist/ (or
 * `STAUNCH_DIST`); `NAME@before` is the same variant on `STAUNCH_BEFORE_DIST`,
 * `NAME@tag` on `STAUNCH_DIST_tag` (A/B runs of copies of the build).
 */
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const dist = process.env.STAUNCH_DIST ?? new URL('../dist', import.meta.url).pathname;
/** A variant named `name@before` loads the build in `STAUNCH_BEFORE_DIST` (an A/B in one run). */
let from = dist;
const load = (entry) => import(pathToFileURL(`${from}/${entry}`).href);

// staunch's transport defaults (docs/undici.md), as undici Agent options.
const settings = {
  connections: 50,
  connectTimeout: 10_000,
  headersTimeout: 60_000,
  bodyTimeout: 300_000,
  keepAliveTimeout: 4_000,
  keepAliveTimeoutThreshold: 2_000,
  keepAliveMaxTimeout: 60_000,
};

let closer;

export const REQUEST_VARIANTS = [
  'bare',
  'bare-imported',
  'passthrough',
  'createAgent',
  'interceptor',
  'no-policies',
  'createAgent-no-policies',
  'createAgent-no-retries',
  'createAgent-no-deadlines',
  'floor-subclass',
  'floor-wrap',
  'floor-watch',
  'floor-spin',
  'floor-timer',
  'floor-hrtime',
  'floor-policies',
];
export const FETCH_VARIANTS = [
  'global-fetch',
  'global-fetch-signal',
  'global-fetch-shared-signal',
  'undici-fetch',
  'staunch-undici-fetch',
  'staunch-fetch',
];

async function dispatcherFor(name) {
  const { Agent } = await import('undici');
  switch (name) {
    case 'bare':
      return new Agent(settings);
    case 'bare-imported':
      // bare in a process that has imported staunch/undici (its modules, its live heap).
      await load('undici/index.js');
      return new Agent(settings);
    case 'passthrough':
      return new Agent(settings).compose((dispatch) => (opts, handler) => dispatch(opts, handler));
    case 'createAgent':
      return (await load('undici/index.js')).createAgent();
    case 'createAgent-no-policies':
      return (await load('undici/index.js')).createAgent({
        breaker: false,
        budget: false,
        rateLimit: false,
      });
    case 'createAgent-no-retries':
      return (await load('undici/index.js')).createAgent({
        breaker: false,
        budget: false,
        rateLimit: false,
        retry: false,
        timeout: false,
      });
    case 'createAgent-no-deadlines':
      // createAgent() with attempt and total deadlines off: what the deadline list costs.
      return (await load('undici/index.js')).createAgent({ timeout: false });
    case 'interceptor':
      return new Agent(settings).compose((await load('undici/index.js')).retryInterceptor());
    case 'no-policies':
      return new Agent(settings).compose(
        (await load('undici/index.js')).retryInterceptor({
          breaker: false,
          budget: false,
          rateLimit: false,
        }),
      );
    case 'floor-subclass':
      return forwarding(new Agent(settings), (handler) => handler);
    case 'floor-wrap':
      return forwarding(new Agent(settings), (handler) => new Relay(handler));
    case 'floor-spin': {
      // floor-wrap plus a fixed amount of pure CPU per request (STAUNCH_SPIN_NS, default 700):
      // how a cost measured in a stub shows on loopback.
      const ns = BigInt(process.env.STAUNCH_SPIN_NS ?? 700);
      return forwarding(new Agent(settings), (handler) => {
        const until = process.hrtime.bigint() + ns;
        while (process.hrtime.bigint() < until);
        return new Relay(handler);
      });
    }
    case 'floor-timer': {
      // floor-wrap in a process that holds one ref'd timer re-armed every 100 ms, as the
      // steady deadline list's is while attempts are pending (src/internal/deadlines.ts).
      const tick = () => {
        timer = setTimeout(tick, 100);
      };
      let timer = setTimeout(tick, 100);
      const dispatcher = await forwarding(new Agent(settings), (handler) => new Relay(handler));
      const close = dispatcher.close.bind(dispatcher);
      dispatcher.close = () => {
        clearTimeout(timer);
        return close();
      };
      return dispatcher;
    }
    case 'floor-hrtime': {
      // floor-wrap plus a process.hrtime() read a request, as a deadline set makes.
      let sink = 0;
      return forwarding(new Agent(settings), (handler) => {
        sink += process.hrtime()[1];
        const relay = new Relay(handler);
        relay.sink = sink;
        return relay;
      });
    }
    case 'floor-policies':
      return policiesFloor(new Agent(settings));
    case 'floor-watch': {
      const { subscribe } = await import('node:diagnostics_channel');
      subscribe('undici:client:sendHeaders', () => {});
      return forwarding(new Agent(settings), (handler) => new Relay(handler));
    }
    default:
      throw new Error(`unknown variant ${name}`);
  }
}

/**
 * The floor of any dispatcher that retries: a `Dispatcher` subclass handing
 * each request to an `Agent`, with `wrap(handler)` the handler it gives the
 * agent (`floor-subclass`: the caller's own; `floor-wrap`: a legacy handler
 * that sees the status and forwards every call, the least a retry layer must
 * put between the agent and the caller).
 */
async function forwarding(agent, wrap) {
  const { Dispatcher } = await import('undici');
  class Forwarding extends Dispatcher {
    dispatch(opts, handler) {
      return agent.dispatch(opts, wrap(handler, opts));
    }
    close() {
      return agent.close();
    }
  }
  return new Forwarding();
}

/** A legacy handler that sees the status and forwards every call (also agent-stub-cost.mjs's floor). */
export class Relay {
  constructor(handler) {
    this.handler = handler;
    this.status = 0;
  }
  onConnect(abort, context) {
    this.handler.onConnect?.(abort, context);
  }
  onHeaders(status, headers, resume, text) {
    this.status = status;
    return this.handler.onHeaders(status, headers, resume, text);
  }
  onData(chunk) {
    return this.handler.onData(chunk);
  }
  onComplete(trailers) {
    this.handler.onComplete(trailers);
  }
  onError(err) {
    this.handler.onError(err);
  }
}

/**
 * `floor-policies`: the least any retry layer with policies on must do for a
 * success, and nothing more: floor-wrap, plus the stale-race probe's
 * `undici:client:sendHeaders` subscription, a per-origin record found by the
 * origin string, the clock read at the send and at the response, and a
 * count and a time-weight for each (what a breaker, a budget and an adaptive
 * limiter learn from). What staunch's `createAgent()` costs beyond this is
 * its design, not the job.
 */
async function policiesFloor(agent) {
  const { subscribe } = await import('node:diagnostics_channel');
  let pending;
  const used = new WeakSet();
  subscribe('undici:client:sendHeaders', (message) => {
    const relay = pending;
    pending = undefined;
    const socket = message?.socket;
    if (relay === undefined || typeof socket !== 'object' || socket === null) return;
    relay.reused = used.has(socket);
    if (!relay.reused) used.add(socket);
    relay.bytesRead = socket.bytesRead;
  });
  const records = new Map();
  const weights = Float64Array.from({ length: 1001 }, (_, ms) => Math.exp(ms / 10_000));
  /** The time weight of an event of record `r` at `now` (a table, as staunch's ledger reads). */
  const weigh = (r, now) => weights[Math.min(1000, Math.max(0, now - r.from))];
  class Counted extends Relay {
    constructor(handler, record, now) {
      super(handler);
      this.record = record;
      this.sentAt = now;
      this.reused = false;
      this.bytesRead = 0;
    }
    onConnect(abort, context) {
      pending = this;
      super.onConnect(abort, context);
    }
    onHeaders(status, headers, resume, text) {
      if (status >= 200 && status < 400) {
        const r = this.record;
        const now = Date.now();
        r.oks++;
        r.okWeight += weigh(r, now);
        r.lastOk = now;
      }
      return super.onHeaders(status, headers, resume, text);
    }
  }
  return forwarding(agent, (handler, opts) => {
    const origin = typeof opts.origin === 'string' ? opts.origin : String(opts.origin);
    let r = records.get(origin);
    if (r === undefined) {
      r = {
        from: Date.now(),
        sends: 0,
        sendWeight: 0,
        lastSend: 0,
        oks: 0,
        okWeight: 0,
        lastOk: 0,
      };
      records.set(origin, r);
    }
    const now = Date.now();
    r.sends++;
    r.sendWeight += weigh(r, now);
    r.lastSend = now;
    return new Counted(handler, r, now);
  });
}

async function fetchFor(name) {
  switch (name) {
    // Nothing here imports npm undici: the global fetch keeps Node's bundled dispatcher.
    case 'global-fetch':
      return globalThis.fetch;
    // What createFetch hands the global fetch besides the URL: a fresh signal per attempt.
    case 'global-fetch-signal':
      return (url, init) =>
        globalThis.fetch(url, { ...init, body: undefined, signal: new AbortController().signal });
    case 'global-fetch-shared-signal': {
      // One signal for every request: what a signal costs the fetch without its making.
      const { signal } = new AbortController();
      return (url, init) => globalThis.fetch(url, { ...init, body: undefined, signal });
    }
    case 'staunch-fetch':
      return (await load('index.js')).createFetch();
    case 'undici-fetch': {
      const undici = await import('undici');
      const agent = new undici.Agent(settings);
      closer = () => agent.close();
      return (url, init) => undici.fetch(url, { ...init, dispatcher: agent });
    }
    case 'staunch-undici-fetch': {
      const fetch = (await load('undici/index.js')).createFetch();
      closer = () => fetch.dispatcher.close();
      return fetch;
    }
    default:
      throw new Error(`unknown variant ${name}`);
  }
}

export async function setup(variant, url) {
  const [name, build] = variant.split('@');
  if (build !== undefined) {
    const env = build === 'before' ? 'STAUNCH_BEFORE_DIST' : `STAUNCH_DIST_${build}`;
    from = process.env[env];
    if (from === undefined) throw new Error(`${variant}: set ${env} to a build`);
  }
  if (FETCH_VARIANTS.includes(name)) {
    const fetch = await fetchFor(name);
    return async () => {
      const res = await fetch(url);
      await res.arrayBuffer();
      return res.status;
    };
  }
  const { request } = await import('undici');
  const dispatcher = await dispatcherFor(name);
  closer = () => dispatcher.close();
  return async () => {
    const { statusCode, body } = await request(url, { dispatcher });
    await body.arrayBuffer();
    return statusCode;
  };
}

/**
 * Sends `n` requests with `send` (from {@link setup}), `concurrency` at a
 * time; any status but 200 fails the run, naming `variant`.
 */
export async function drive(send, variant, n, concurrency) {
  let left = n;
  const worker = async () => {
    while (left-- > 0) {
      const status = await send();
      if (status !== 200) throw new Error(`${variant}: status ${status}`);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

export function info() {
  let undici;
  try {
    undici = createRequire(import.meta.url)('undici/package.json').version;
  } catch {}
  return { node: process.version, bundledUndici: process.versions.undici, undici };
}

export async function teardown() {
  await closer?.();
}
