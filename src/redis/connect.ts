/**
 * `connectRedisStore(url)`: a Redis store built from a URL, with its own
 * ioredis client set up for a store (fail fast while disconnected, no
 * unhandled `error` events), connected before it is handed out.
 */
import { redactUrl } from '../internal/redact.js';
import { checkNumber, checkObject, describe } from '../internal/validate.js';
import { redactError } from './redact.js';
import {
  createRedisStore,
  type RedisScriptClient,
  type RedisStore,
  type RedisStoreOptions,
} from './store.js';

/** Options of {@link connectRedisStore}: those of `redisStore` but the client, plus `connectTimeout`. */
export interface ConnectRedisStoreOptions extends Omit<RedisStoreOptions, 'client'> {
  /**
   * Longest wait for the first connection, in ms.
   * @default 5000
   */
  connectTimeout?: number | undefined;
}

/** A store and the client it owns. */
export interface RedisConnection {
  readonly store: RedisStore;
  /** The ioredis client (for commands of your own; `close` ends it). */
  readonly client: RedisScriptClient & { quit(): Promise<unknown>; disconnect(): void };
  /** Ends the connection (`QUIT`, then a hard disconnect if Redis does not answer). */
  close(): Promise<void>;
}

interface IoRedisClient extends RedisScriptClient {
  connect(): Promise<void>;
  quit(): Promise<unknown>;
  disconnect(): void;
  on(event: 'error', listener: (error: unknown) => void): unknown;
}
type IoRedisConstructor = new (url: string, options: Record<string, unknown>) => IoRedisClient;

/**
 * Connects to `url` (`redis://[user:password@]host:port[/db]` or `rediss://`)
 * with ioredis and returns a {@link RedisStore} over that connection. Rejects
 * (with the URL's password redacted) if Redis cannot be reached within
 * `connectTimeout`. ioredis is loaded on first use.
 * @example
 * const { store, close } = await connectRedisStore(process.env.REDIS_URL!);
 * const fetch = createFetch({ store });
 * // … on shutdown:
 * await close();
 */
export async function connectRedisStore(
  url: string,
  options: ConnectRedisStoreOptions = {},
): Promise<RedisConnection> {
  if (typeof url !== 'string') {
    throw new TypeError(`connectRedisStore url must be a string, got ${describe(url)}`);
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new TypeError(
      `connectRedisStore url must be a redis:// URL, got ${JSON.stringify(redactUrl(url))}`,
    );
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') {
    throw new TypeError(
      `connectRedisStore url must be a redis:// or rediss:// URL, got ${JSON.stringify(redactUrl(url))}`,
    );
  }
  const o = checkObject('connectRedisStore options', options, [
    'prefix',
    'timeout',
    'startupTimeout',
    'probeInterval',
    'connectTimeout',
  ]) as ConnectRedisStoreOptions;
  const connectTimeout = checkNumber('connectRedisStore.connectTimeout', o.connectTimeout ?? 5000, {
    min: 0,
    exclusiveMin: true,
  });
  const secrets = parsed.password === '' ? [] : [parsed.password, safeDecode(parsed.password)];

  const { Redis } = (await import('ioredis')) as unknown as { Redis: IoRedisConstructor };
  const client = new Redis(url, {
    lazyConnect: true,
    connectTimeout,
    // A command never waits for a reconnection: the store answers locally meanwhile.
    maxRetriesPerRequest: 1,
    retryStrategy: (times: number) => Math.min(times * 100, 1000),
  });
  // The store reports failures through onStatus; without a listener ioredis would print them.
  client.on('error', () => {});
  const store = createRedisStore(
    {
      client,
      ...(o.prefix !== undefined && { prefix: o.prefix }),
      ...(o.timeout !== undefined && { timeout: o.timeout }),
      ...(o.startupTimeout !== undefined && { startupTimeout: o.startupTimeout }),
      ...(o.probeInterval !== undefined && { probeInterval: o.probeInterval }),
    },
    { secrets },
  );
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no connection within ${connectTimeout} ms`)),
        connectTimeout,
      );
      client.connect().then(
        () => {
          clearTimeout(timer);
          resolve();
        },
        (error: unknown) => {
          clearTimeout(timer);
          reject(error);
        },
      );
    });
  } catch (error) {
    client.disconnect();
    throw new Error(
      `connectRedisStore: cannot connect to ${redactUrl(url)}: ${redactError(error, secrets)}`,
    );
  }
  let closed: Promise<void> | undefined;
  return {
    store,
    client,
    close(): Promise<void> {
      closed ??= quit(client);
      return closed;
    },
  };
}

async function quit(client: IoRedisClient): Promise<void> {
  try {
    await Promise.race([
      client.quit(),
      new Promise((_, reject) => setTimeout(reject, 1000).unref?.()),
    ]);
  } catch {
    // Redis gone or slow: drop the socket.
  } finally {
    client.disconnect();
  }
}

function safeDecode(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}
