/**
 * The client interface the store calls (types only): ioredis's shape, which
 * an ioredis client has as is and ./node-redis.ts gives a node-redis client.
 */

/**
 * What the store needs of a Redis client: an ioredis `Redis` or `Cluster`
 * (v5 or v6) fits as is; a node-redis client is adapted to it. `status` is
 * read, when present: while it says the client is still connecting,
 * decisions wait for it (up to `startupTimeout`); while it says the
 * connection is down, they are answered locally at once instead of being
 * queued.
 */
export interface RedisScriptClient {
  evalsha(sha: string, numKeys: number, ...args: string[]): Promise<unknown>;
  eval(script: string, numKeys: number, ...args: string[]): Promise<unknown>;
  ping(): Promise<unknown>;
  readonly status?: string;
}
