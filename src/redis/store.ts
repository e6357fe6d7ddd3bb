/**
 * `redisStore`: the `StateStore` of a fleet. Every decision is one Lua script
 * on one Redis key (see ./scripts.ts); when Redis is slow or unreachable, the
 * store answers from a process-local memory store instead and says so once.
 */

import { describe } from '../internal/validate.js';
import { type MemoryStore, memoryStore } from '../store/memory.js';
import type { Json, StateStore, StoreOperation, StoreStatus } from '../store/store.js';
import { type RedisStoreOptions, validate } from './options.js';
import { redactError } from './redact.js';
import { recheckDelay, scriptingRefusal, scriptsRun } from './scripting.js';
import { type LuaScript, SCRIPTS } from './scripts.js';
import {
  DEGRADE_AFTER,
  StoreReleasedError,
  StoreStartupError,
  StoreTimeoutError,
  StrikeCounter,
  within,
} from './wait.js';

export type { RedisScriptClient, RedisStoreOptions } from './options.js';
export { redisStoreDefaults } from './options.js';

/** A {@link StateStore} kept in Redis. */
export interface RedisStore extends StateStore {
  run<A extends Json, R extends Json>(
    key: string,
    op: StoreOperation<A, R>,
    args: A,
    now: number,
  ): R | Promise<R>;
  onStatus(listener: (status: StoreStatus) => void): () => void;
  /** `shared` while every decision goes to Redis, `degraded` while some (or all) are local. */
  readonly status: 'shared' | 'degraded';
  /** The Redis key that holds a store key's state. */
  redisKey(key: string): string;
}

/** Not public: knobs for the tests and for `connectRedisStore`. */
export interface RedisStoreInternals {
  /** Tests only: the scripts take `now` from the caller instead of Redis `TIME`. */
  callerTime?: boolean;
  /** Strings scrubbed from error messages (a password the caller knows of). */
  secrets?: readonly string[];
}

/** ioredis states in which a command would only be queued until a reconnection. */
const DOWN = new Set(['reconnecting', 'close', 'end']);
/** ioredis states of a first connection: commands are queued until `ready`. */
const STARTING = new Set(['wait', 'connecting', 'connect']);

/** A client call whose synchronous throw becomes a rejection (the store never throws on I/O). */
function tryCall<T>(call: () => Promise<T>): Promise<T> {
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

const ignore = (): void => {};

/**
 * The store behind `redisStore`, with the internals the tests use.
 * @internal
 */
export function createRedisStore(
  options: RedisStoreOptions,
  internals: RedisStoreInternals = {},
): RedisStore {
  const { client, prefix, timeout, startupTimeout, probeInterval } = validate(options);
  const callerTime = internals.callerTime === true;
  const secrets = internals.secrets ?? [];
  const local: MemoryStore = memoryStore();
  const listeners = new Set<(status: StoreStatus) => void>();
  /** Every decision is local (the connection is down, an error, no start). */
  let allLocal = false;
  /** Keys whose decisions timed out repeatedly: local until a probe gets through. */
  const localKeys = new Set<string>();
  const strikes = new StrikeCounter();
  /** Scripts this store has had an answer for: the first use of each may take its load. */
  const answered = new Set<string>();
  /** Loads in flight (`EVAL` after `NOSCRIPT`), by SHA: concurrent first uses send the source once. */
  const loading = new Map<string, Promise<unknown>>();
  let probing = false;
  let lastProbe = 0;
  /** Redis refused a script: every key is local, and the probe checks that scripts run, backing off. */
  let scriptingOff = false;
  /** Re-checks of scripting that failed in a row (each doubles the wait before the next). */
  let rechecks = 0;
  /**
   * Decisions waiting for Redis, in the order they were sent, each with its
   * key and its start-up deadline (if it may take the start-up timeout): a
   * release answers them locally in that order, so concurrent decisions keep
   * their order when the store degrades.
   */
  const waiting = new Map<
    (error: Error) => void,
    { key: string; since: () => number | undefined }
  >();
  const release = (key?: string): void => {
    for (const [fail, wait] of [...waiting]) {
      if (key === undefined || wait.key === key) fail(new StoreReleasedError('released'));
    }
  };

  const report = (status: StoreStatus): void => {
    for (const listener of [...listeners]) {
      try {
        listener(status);
      } catch {
        // An observer's bug must not break the decision that reported.
      }
    }
  };
  const isDegraded = (): boolean => allLocal || localKeys.size > 0;
  /** Reports `degraded` once per episode: the first key (or all) going local. */
  const degrade = (error: unknown, key?: string): void => {
    const episode = isDegraded();
    if (key === undefined) allLocal = true;
    else localKeys.add(key);
    release(key);
    if (episode) return;
    lastProbe = Date.now();
    report({ status: 'degraded', error: redactError(error, secrets) });
  };
  const recover = (): void => {
    if (!isDegraded()) return;
    allLocal = false;
    scriptingOff = false;
    rechecks = 0;
    localKeys.clear();
    strikes.clearAll();
    // Local state was a stopgap: the next episode starts from scratch, not from stale counts.
    local.clear();
    report({ status: 'recovered' });
  };
  const redisKey = (key: string): string => `${prefix}{${key}}`;
  const down = (): string | undefined => {
    const status = client.status;
    return status !== undefined && DOWN.has(status) ? `connection is ${status}` : undefined;
  };
  /** Still connecting for the first time: without a `status`, until the first answer. */
  const starting = (): boolean => {
    const status = client.status;
    return status === undefined ? answered.size === 0 : STARTING.has(status);
  };
  /**
   * A `PING` (a check that scripts run, while Redis refuses them), at most once
   * per `probeInterval` (doubling with each failed scripting check).
   */
  const probe = (): void => {
    const interval = scriptingOff ? recheckDelay(probeInterval, rechecks) : probeInterval;
    if (probing || Date.now() - lastProbe < interval) return;
    probing = true;
    lastProbe = Date.now();
    const scripts = scriptingOff;
    const patience = scripts ? startupTimeout : timeout;
    const answer =
      down() === undefined
        ? within(
            tryCall(() => (scripts ? scriptsRun(client) : client.ping())),
            patience,
            () => new StoreTimeoutError(`no answer within ${patience} ms`),
          )
        : Promise.reject();
    answer
      .then(recover, () => {
        if (scripts) rechecks++;
      })
      .finally(() => {
        probing = false;
      });
  };
  /** `EVAL` sends the source and caches it; others that need it meanwhile wait for that one. */
  const load = (script: LuaScript, key: string, argv: string[]): Promise<unknown> => {
    const pending = loading.get(script.sha);
    if (pending !== undefined) {
      // Another node of a cluster may still lack it: a second NOSCRIPT sends the source.
      return pending
        .then(ignore, ignore)
        .then(() => tryCall(() => client.evalsha(script.sha, 1, key, ...argv)))
        .catch((error: unknown) => {
          if (isNoScript(error)) return client.eval(script.source, 1, key, ...argv);
          throw error;
        });
    }
    const sent = tryCall(() => client.eval(script.source, 1, key, ...argv));
    loading.set(script.sha, sent);
    const done = (): void => {
      if (loading.get(script.sha) === sent) loading.delete(script.sha);
    };
    sent.then(done, done);
    return sent;
  };
  /**
   * One decision in Redis on store key `key`. A reply later than `timeout` is
   * a strike against the key but is still awaited (a late answer from Redis
   * beats a blank local one: the limiter would read "not engaged"), up to
   * `DEGRADE_AFTER × timeout`, or until the key goes local. While the client
   * is connecting, on a script's first use, and from a `NOSCRIPT` on (SCRIPT
   * FLUSH, a restart, a failover) it waits up to `startupTimeout` instead: the
   * start and the load are not slow replies.
   */
  const decide = (script: LuaScript, key: string, argv: string[]): Promise<unknown> => {
    const sentAt = Date.now();
    const target = redisKey(key);
    let longSince = starting() || !answered.has(script.sha) ? sentAt : undefined;
    let struck = false;
    const reply = tryCall(() => client.evalsha(script.sha, 1, target, ...argv)).catch(
      (error: unknown) => {
        if (!isNoScript(error)) throw error;
        longSince ??= Date.now();
        return load(script, target, argv);
      },
    );
    const patience = DEGRADE_AFTER * timeout;
    const check = (): Error | number => {
      const now = Date.now();
      if (allLocal || localKeys.has(key)) return new StoreReleasedError('released');
      if (longSince !== undefined) {
        const reason = down();
        if (reason !== undefined) return new Error(reason);
        const left = longSince + startupTimeout - now;
        if (left <= 0) {
          const error = new StoreStartupError(
            `no answer within the start-up timeout of ${startupTimeout} ms`,
          );
          // Every decision sent before this one is past its start-up timeout too (its timer
          // may simply fire later): all of them fail now, first sent first.
          for (const [fail, wait] of [...waiting]) {
            const since = wait.since();
            if (since !== undefined && since + startupTimeout <= now) fail(error);
          }
          return error;
        }
        return Math.min(left, timeout);
      }
      const elapsed = now - sentAt;
      if (elapsed < timeout) return timeout - elapsed;
      if (!struck) {
        struck = true;
        if (strikes.strike(key, sentAt, now)) {
          const error = `no answer within ${timeout} ms, ${DEGRADE_AFTER} times in a row`;
          degrade(new StoreTimeoutError(error), key);
          return new StoreReleasedError('released');
        }
      }
      if (elapsed >= patience) return new StoreTimeoutError(`no answer within ${patience} ms`);
      return Math.min(timeout, patience - elapsed);
    };
    const track = (fail: (error: Error) => void): (() => void) => {
      waiting.set(fail, { key, since: () => longSince });
      return () => waiting.delete(fail);
    };
    return within(reply, Math.min(timeout, startupTimeout), check, track).then((value) => {
      answered.add(script.sha);
      // Only an answer in time clears the key's strikes; a late one leaves them.
      if (!struck) strikes.clear(key);
      return value;
    });
  };
  /**
   * A decision that got no answer from Redis: a decision that waited its
   * patience out sends its key local; a start-up failure, an error or a down
   * connection, every key (a refused script too, and scripting is then checked
   * apart, backing off); a decision released by its key going local, nothing more.
   */
  const failed = (key: string, error: unknown): void => {
    if (error instanceof StoreReleasedError) return;
    const refusal = scriptingRefusal(error);
    if (refusal !== undefined) {
      if (!scriptingOff) lastProbe = Date.now();
      scriptingOff = true;
      degrade(refusal);
      return;
    }
    if (error instanceof StoreTimeoutError) degrade(error, key);
    else degrade(error);
  };

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
      if (allLocal || localKeys.has(key)) {
        probe();
        return local.run(key, op, args, now);
      }
      const reason = down();
      if (reason !== undefined) {
        degrade(new Error(reason));
        return local.run(key, op, args, now);
      }
      const argv = [JSON.stringify(args), callerTime ? String(now) : ''];
      return decide(script, key, argv)
        .then((reply) => {
          if (typeof reply !== 'string') throw new TypeError(`unexpected reply from ${op.name}`);
          return JSON.parse(reply) as R;
        })
        .catch((error: unknown) => {
          failed(key, error);
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
      return isDegraded() ? 'degraded' : 'shared';
    },
    redisKey,
  };
}

/**
 * The Redis-backed {@link StateStore}: breaker, budget and rate limits shared
 * by every process that uses the same Redis and prefix. Each decision is one
 * Lua script (called by SHA, reloaded after `NOSCRIPT`) on one key with a TTL,
 * timed by Redis's own clock. Decisions sent while the client is still
 * connecting, and each script's first load, wait up to `startupTimeout`. A
 * later reply than `timeout` is a strike against its key, still awaited up to
 * 3 × `timeout`; a key goes local on 3 strikes in a row or one decision
 * unanswered for 3 × `timeout`, and every key does when the connection is
 * down or Redis answers an error. A Redis that refuses scripts (`EVAL`
 * renamed away, an ACL, Valkey without Lua) sends every key local on the
 * first decision, and is checked again after `probeInterval`, doubling up to
 * a minute. `onStatus` reports `degraded` once, and `recovered` when a
 * probe gets through. Requests never
 * fail because Redis does. See docs/fleet.md.
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
