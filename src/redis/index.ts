/**
 * `staunch/redis`: one breaker, one retry budget and one rate limit per
 * origin for a whole fleet, kept in Redis (an ioredis or node-redis client,
 * peer dependencies).
 * See docs/fleet.md. (The fleet harness, `startFleet`, is the lab's:
 * `staunch/lab`.)
 */

export type {
  ConnectRedisStoreOptions,
  IoRedisConnectionClient,
  NodeRedisConnectionClient,
  RedisConnection,
  RedisLibrary,
} from './connect.js';
export { connectRedisStore } from './connect.js';
export type { NodeRedisClient, NodeRedisEvalOptions } from './node-redis.js';
export type { LuaScript } from './scripts.js';
export { SCRIPTS } from './scripts.js';
export type { RedisScriptClient, RedisStore, RedisStoreOptions } from './store.js';
export { redisStore, redisStoreDefaults } from './store.js';
