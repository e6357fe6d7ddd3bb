/**
 * node-redis (`redis` on npm, v5 and v6) behind the store's client interface.
 * The store speaks ioredis's shape (`evalsha(sha, numKeys, ...args)`, a
 * `status` string); node-redis has `evalSha(sha, { keys, arguments })` and two
 * booleans, `isOpen` and `isReady`. A client is recognised by that shape, never
 * by `instanceof` of the other library's classes, and the library is not
 * loaded here: the types below are the little of it the store calls.
 */
import type { RedisScriptClient } from './client.js';

/** What a script call of node-redis takes. */
export interface NodeRedisEvalOptions {
  keys?: string[];
  arguments?: string[];
}

/**
 * What the store needs of a node-redis client (`createClient()`) or cluster
 * (`createCluster()`), v5 or v6, connected (`await client.connect()`) or
 * connecting.
 */
export interface NodeRedisClient {
  evalSha(sha: string, options?: NodeRedisEvalOptions): Promise<unknown>;
  eval(script: string, options?: NodeRedisEvalOptions): Promise<unknown>;
  ping(): Promise<unknown>;
  readonly isOpen: boolean;
  readonly isReady: boolean;
}

/** node-redis's shape: `evalSha` in camel case and a boolean `isReady` (ioredis has `evalsha` and `status`). */
export function isNodeRedis(client: unknown): client is NodeRedisClient {
  if (typeof client !== 'object' || client === null) return false;
  const c = client as Partial<NodeRedisClient>;
  return (
    typeof c.evalSha === 'function' &&
    typeof c.eval === 'function' &&
    typeof c.ping === 'function' &&
    typeof c.isReady === 'boolean' &&
    typeof c.isOpen === 'boolean'
  );
}

/**
 * The store's client over a node-redis client. `status` maps the two booleans
 * onto ioredis's names: open and not yet ready is `connecting` until the client
 * has been seen ready once, `reconnecting` after (node-redis queues commands
 * meanwhile, so the store must answer locally rather than wait); closed is
 * `end` (a client never connected rejects every command at once).
 */
export function fromNodeRedis(client: NodeRedisClient): RedisScriptClient {
  let seenReady = false;
  const options = (numKeys: number, args: string[]): NodeRedisEvalOptions => ({
    keys: args.slice(0, numKeys),
    arguments: args.slice(numKeys),
  });
  return {
    evalsha: (sha, numKeys, ...args) => client.evalSha(sha, options(numKeys, args)),
    eval: (source, numKeys, ...args) => client.eval(source, options(numKeys, args)),
    ping: () => client.ping(),
    get status(): string {
      if (client.isReady) {
        seenReady = true;
        return 'ready';
      }
      if (!client.isOpen) return 'end';
      return seenReady ? 'reconnecting' : 'connecting';
    },
  };
}
