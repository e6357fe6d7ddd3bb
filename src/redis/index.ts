/**
 * `staunch/redis`: one breaker, one retry budget and one rate limit per
 * origin for a whole fleet, kept in Redis (ioredis client, peer dependency).
 * See docs/fleet.md.
 */

export type { ConnectRedisStoreOptions, RedisConnection } from './connect.js';
export { connectRedisStore } from './connect.js';
export type {
  Fleet,
  FleetMemberContext,
  FleetMemberMain,
  FleetOptions,
} from './fleet.js';
export { startFleet } from './fleet.js';
export type { LuaScript } from './scripts.js';
export { SCRIPTS } from './scripts.js';
export type { RedisScriptClient, RedisStore, RedisStoreOptions } from './store.js';
export { redisStore, redisStoreDefaults } from './store.js';
