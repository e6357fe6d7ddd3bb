/**
 * `redisStore`: the `StateStore` of a fleet. Every decision is one Lua script
 * on one Redis key (see ./scripts.ts); when Redis is slow or unreachable, the
 * store answers from a process-local memory store instead and says so once.
 */

import { checkNumber, checkObject, describe } from '../internal/validate.js';
import { type MemoryStore, memoryStore } from '../store/memory.js';
import type { Json, StateStore, StoreOperation, StoreStatus } from '../store/store.js';
import { redactError } from './redact.js';
import { type LuaScript, SCRIPTS } from './scripts.js';

/**
 * What the store needs of a Redis client: an ioredis `Redis` or `Cluster`
 * (v5 or v6) fits as is. `status` is read, when present, to answer locally at
 * once while the connection is down instead of queueing commands.
 */
export interface RedisScriptClient {
  evalsha(sha: string, numKeys: number, ...args: string[]): Promise<unknown>;
  eval(script: string, numKeys: number, ...args: string[]): Promise<unknown>;
  ping(): Promise<unknown>;
  readonly status?: string;
}

/** Options of {@link redisStore}. Durations in ms. */
export interface RedisStoreOptions {
  /** The Redis client (ioredis `Redis` or `Cluster`), connected or connecting. */
  client: RedisScriptClient;
  /**
   * Prepended to every key: `<prefix>{<store key>}`. Must not contain `{` or
   * `}` (the braces are the Cluster hash tag).
   * @default 'staunch:'
   */
  prefix?: string | undefined;
  /**
   * Longest wait for one decision before the store falls back to local state.
   * @default 50
   */
  timeout?: number | undefined;
  /**
   * While degraded, at most one probe (`PING`) per this many ms, sent on the
   * back of a decision (there is no background timer).
   * @default 1000
   */
  probeInterval?: number | undefined;
}

/** A {@link StateStore} kept in Redis. */
export interface RedisStore extends StateStore {
  run<A extends Json, R extends Json>(
    key: string,
    op: StoreOperation<A, R>,
    args: A,
    now: number,
  ): R | Promise<R>;
  onStatus(listener: (status: StoreStatus) => void): () => void;
  /** `shared` while decisions go to Redis, `degraded` while they are local. */
  readonly status: 'shared' | 'degraded';
  /** The Redis key that holds a store key's state. */
  redisKey(key: string): string;
}

/** Defaults of {@link RedisStoreOptions}. */
export const redisStoreDefaults: {
  readonly prefix: string;
  readonly timeout: number;
  readonly probeInterval: number;
} = Object.freeze({ prefix: 'staunch:', timeout: 50, probeInterval: 1000 });

/** Not public: knobs for the tests and for `connectRedisStore`. */
export interface RedisStoreInternals {
  /** Tests only: the scripts take `now` from the caller instead of Redis `TIME`. */
  callerTime?: boolean;
  /** Strings scrubbed from error messages (a password the caller knows of). */
  secrets?: readonly string[];
}

const OPTION_KEYS = ['client', 'prefix', 'timeout', 'probeInterval'];
/** ioredis states in which a command would only be queued. */
const DOWN = new Set(['reconnecting', 'close', 'end']);

class StoreTimeoutError extends Error {
  override name = 'TimeoutError';
}

/**
 * Rejects if `promise` has not settled `ms` after the call. When the timer
 * fires, the verdict waits for the end of the current event-loop turn
 * (`setImmediate`): after a stall of this process (GC, CPU contention) the
 * timer phase runs before the I/O phase, and a reply already in the socket
 * buffer must not count as late.
 */
function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const timer = setTimeout(() => {
      setImmediate(() => {
        if (settled) return;
        settled = true;
        reject(new StoreTimeoutError(`no answer within ${ms} ms`));
      });
    }, ms);
    timer.unref?.();
    promise.then(
      (value) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

/** A client call whose synchronous throw becomes a rejection (the store never throws on I/O). */
function attempt<T>(call: () => Promise<T>): Promise<T> {
  try {
    return call();
  } catch (error) {
    return Promise.reject(error);
  }
}

/** RESP error replies start with an upper-case error code; `NOSCRIPT` is Redis's. */
function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}

interface Resolved {
  client: RedisScriptClient;
  prefix: string;
  timeout: number;
  probeInterval: number;
}

function validate(options: RedisStoreOptions): Resolved {
  const o = checkObject('redisStore options', options, OPTION_KEYS) as Partial<RedisStoreOptions>;
  const client = o.client as Partial<RedisScriptClient> | undefined;
  if (
    typeof client !== 'object' ||
    client === null ||
    typeof client.evalsha !== 'function' ||
    typeof client.eval !== 'function' ||
    typeof client.ping !== 'function'
  ) {
    throw new TypeError(
      `redisStore.client must be an ioredis client (Redis or Cluster), got ${describe(client)}`,
    );
  }
  const prefix = o.prefix ?? redisStoreDefaults.prefix;
  if (typeof prefix !== 'string') {
    throw new TypeError(`redisStore.prefix must be a string, got ${describe(prefix)}`);
  }
  if (/[{}]/.test(prefix)) {
    throw new RangeError(
      `redisStore.prefix must not contain "{" or "}" (the hash tag is the store key), got ${describe(prefix)}`,
    );
  }
  const timeout = checkNumber('redisStore.timeout', o.timeout ?? redisStoreDefaults.timeout, {
    min: 0,
    exclusiveMin: true,
  });
  const probeInterval = checkNumber(
    'redisStore.probeInterval',
    o.probeInterval ?? redisStoreDefaults.probeInterval,
    { min: 0 },
  );
  return { client: client as RedisScriptClient, prefix, timeout, probeInterval };
}

/**
 * The store behind `redisStore`, with the internals the tests use.
 * @internal
 */
export function createRedisStore(
  options: RedisStoreOptions,
  internals: RedisStoreInternals = {},
): RedisStore {
  const { client, prefix, timeout, probeInterval } = validate(options);
  const callerTime = internals.callerTime === true;
  const secrets = internals.secrets ?? [];
  const local: MemoryStore = memoryStore();
  const listeners = new Set<(status: StoreStatus) => void>();
  let degraded = false;
  let probing = false;
  let lastProbe = 0;

  const report = (status: StoreStatus): void => {
    for (const listener of [...listeners]) {
      try {
        listener(status);
      } catch {
        // An observer's bug must not break the decision that reported.
      }
    }
  };
  const degrade = (error: unknown): void => {
    if (degraded) return;
    degraded = true;
    lastProbe = Date.now();
    report({ status: 'degraded', error: redactError(error, secrets) });
  };
  const recover = (): void => {
    if (!degraded) return;
    degraded = false;
    // Local state was a stopgap: the next episode starts from scratch, not from stale counts.
    local.clear();
    report({ status: 'recovered' });
  };
  const down = (): string | undefined => {
    const status = client.status;
    return status !== undefined && DOWN.has(status) ? `connection is ${status}` : undefined;
  };
  const probe = (): void => {
    if (probing || Date.now() - lastProbe < probeInterval) return;
    probing = true;
    lastProbe = Date.now();
    const answer =
      down() === undefined
        ? withTimeout(
            attempt(() => client.ping()),
            timeout,
          )
        : Promise.reject();
    answer
      .then(recover, () => {})
      .finally(() => {
        probing = false;
      });
  };
  const call = (script: LuaScript, key: string, argv: string[]): Promise<unknown> =>
    attempt(() => client.evalsha(script.sha, 1, key, ...argv)).catch((error: unknown) => {
      // SCRIPT FLUSH, a restart or a failover to a node that never saw it: EVAL sends the source and caches it.
      if (isNoScript(error)) return client.eval(script.source, 1, key, ...argv);
      throw error;
    });
  const redisKey = (key: string): string => `${prefix}{${key}}`;

  return {
    run<A extends Json, R extends Json>(
      key: string,
      op: StoreOperation<A, R>,
      args: A,
      now: number,
    ): R | Promise<R> {
      const script = SCRIPTS.get(op.name);
      if (script === undefined) {
        throw new TypeError(`redisStore has no script for the operation ${describe(op.name)}`);
      }
      if (degraded) {
        probe();
        return local.run(key, op, args, now);
      }
      const reason = down();
      if (reason !== undefined) {
        degrade(new Error(reason));
        return local.run(key, op, args, now);
      }
      const argv = [JSON.stringify(args), callerTime ? String(now) : ''];
      return withTimeout(call(script, redisKey(key), argv), timeout)
        .then((reply) => {
          if (typeof reply !== 'string') throw new TypeError(`unexpected reply from ${op.name}`);
          return JSON.parse(reply) as R;
        })
        .catch((error: unknown) => {
          degrade(error);
          return local.run(key, op, args, now);
        });
    },
    onStatus(listener: (status: StoreStatus) => void): () => void {
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
      };
    },
    get status(): 'shared' | 'degraded' {
      return degraded ? 'degraded' : 'shared';
    },
    redisKey,
  };
}

/**
 * The Redis-backed {@link StateStore}: breaker, budget and rate limits shared
 * by every process that uses the same Redis and prefix. Each decision is one
 * Lua script (called by SHA, reloaded after `NOSCRIPT`) on one key with a TTL,
 * timed by Redis's own clock. If Redis does not answer within `timeout`, the
 * decision is made on local state and `onStatus` reports `degraded` once;
 * `recovered` follows when a probe gets through. Requests never fail because
 * Redis does. See docs/fleet.md.
 * @example
 * import { Redis } from 'ioredis';
 * import { createFetch } from 'staunch';
 * import { redisStore } from 'staunch/redis';
 *
 * const fetch = createFetch({ store: redisStore({ client: new Redis(process.env.REDIS_URL) }) });
 */
export function redisStore(options: RedisStoreOptions): RedisStore {
  return createRedisStore(options);
}
