/**
 * The options of `redisStore`, their defaults and their validation; the
 * client is taken as is (ioredis) or through its adapter (node-redis).
 */

import { checkNumber, checkObject, describe, keysOf } from '../internal/validate.js';
import type { RedisScriptClient } from './client.js';
import { fromNodeRedis, isNodeRedis, type NodeRedisClient } from './node-redis.js';

/** Options of {@link redisStore}. Durations in ms. */
export interface RedisStoreOptions {
  /**
   * The Redis client, connected or connecting: ioredis `Redis` or `Cluster`,
   * or node-redis `createClient()` or `createCluster()` (told apart by shape).
   */
  client: RedisScriptClient | NodeRedisClient;
  /**
   * Prepended to every key: `<prefix>{<store key>}`. Must not contain `{` or
   * `}` (the braces are the Cluster hash tag).
   * @default 'staunch:'
   */
  prefix?: string | undefined;
  /**
   * A reply slower than this is a strike against its key (the reply is still
   * awaited, up to 3 × `timeout`). A key goes to local state on its 3rd
   * strike in a row (within 10 s), or when one of its decisions waited
   * 3 × `timeout`, until Redis answers a probe; one slow reply does not.
   * @default 50
   */
  timeout?: number | undefined;
  /**
   * Longest wait, instead of `timeout`, for a decision sent while the client
   * is still connecting, and for the first use (load) of each script. When it
   * passes, the store degrades at once.
   * @default 2000
   */
  startupTimeout?: number | undefined;
  /**
   * While degraded, at most one probe (`PING`) per this many ms, sent on the
   * back of a decision (there is no background timer).
   * @default 1000
   */
  probeInterval?: number | undefined;
}

/** Defaults of {@link RedisStoreOptions}. */
export const redisStoreDefaults: {
  readonly prefix: string;
  readonly timeout: number;
  readonly startupTimeout: number;
  readonly probeInterval: number;
} = Object.freeze({ prefix: 'staunch:', timeout: 50, startupTimeout: 2000, probeInterval: 1000 });

const OPTION_KEYS = keysOf<RedisStoreOptions>()([
  'client',
  'prefix',
  'timeout',
  'startupTimeout',
  'probeInterval',
]);

/** Options resolved once, the client adapted. */
export interface Resolved {
  /** node-redis already adapted. */
  client: RedisScriptClient;
  prefix: string;
  timeout: number;
  startupTimeout: number;
  probeInterval: number;
}

export type { RedisScriptClient };

/** Validates the options (a TypeError or RangeError naming the option and the value) and adapts the client. */
export function validate(options: RedisStoreOptions): Resolved {
  const o = checkObject('redisStore options', options, OPTION_KEYS) as Partial<RedisStoreOptions>;
  const client = adapt(o.client);
  const prefix = o.prefix ?? redisStoreDefaults.prefix;
  if (typeof prefix !== 'string') {
    throw new TypeError(`redisStore.prefix must be a string, got ${describe(prefix)}`);
  }
  if (/[{}]/.test(prefix)) {
    throw new RangeError(
      `redisStore.prefix must not contain "{" or "}" (the hash tag is the store key), got ${describe(prefix)}`,
    );
  }
  const positive = { min: 0, exclusiveMin: true };
  const timeout = checkNumber(
    'redisStore.timeout',
    o.timeout ?? redisStoreDefaults.timeout,
    positive,
  );
  const startupTimeout = checkNumber(
    'redisStore.startupTimeout',
    o.startupTimeout ?? redisStoreDefaults.startupTimeout,
    positive,
  );
  const probeInterval = checkNumber(
    'redisStore.probeInterval',
    o.probeInterval ?? redisStoreDefaults.probeInterval,
    { min: 0 },
  );
  return { client, prefix, timeout, startupTimeout, probeInterval };
}

/** ioredis (or any client of the store's own shape) as is; node-redis through its adapter. */
function adapt(client: unknown): RedisScriptClient {
  const c = client as Partial<RedisScriptClient> | null | undefined;
  if (
    typeof c === 'object' &&
    c !== null &&
    typeof c.evalsha === 'function' &&
    typeof c.eval === 'function' &&
    typeof c.ping === 'function'
  ) {
    return c as RedisScriptClient;
  }
  if (isNodeRedis(client)) return fromNodeRedis(client);
  throw new TypeError(
    'redisStore.client must be an ioredis client (Redis or Cluster) or a node-redis client ' +
      `(createClient or createCluster), got ${describe(client)}`,
  );
}
