/**
 * `connectRedisStore(url)`: a Redis store built from a URL, with its own
 * client (ioredis, or node-redis on request) set up for a store (fail fast
 * while disconnected, no unhandled `error` events), connected before it is
 * handed out.
 */
import { redactUrl } from '../internal/redact.js';
import { checkNumber, checkObject, describe } from '../internal/validate.js';
import type { NodeRedisClient } from './node-redis.js';
import { redactError } from './redact.js';
import {
  createRedisStore,
  type RedisScriptClient,
  type RedisStore,
  type RedisStoreOptions,
} from './store.js';

/** The client libraries `connectRedisStore` can connect with. */
export type RedisLibrary = 'ioredis' | 'node-redis';

/** Options of {@link connectRedisStore}: those of `redisStore` but the client, plus `connectTimeout` and `library`. */
export interface ConnectRedisStoreOptions extends Omit<RedisStoreOptions, 'client'> {
  /**
   * Longest wait for the first connection, in ms.
   * @default 5000
   */
  connectTimeout?: number | undefined;
  /**
   * The client library to connect with (a peer dependency, loaded on first
   * use): `'ioredis'`, or `'node-redis'` (the `redis` package).
   * @default 'ioredis'
   */
  library?: RedisLibrary | undefined;
}

/** The ioredis client of a {@link RedisConnection}. */
export interface IoRedisConnectionClient extends RedisScriptClient {
  quit(): Promise<unknown>;
  disconnect(): void;
}

/** The node-redis client of a {@link RedisConnection} (`library: 'node-redis'`). */
export interface NodeRedisConnectionClient extends NodeRedisClient {
  close(): Promise<unknown>;
  destroy(): void;
}

/** A store and the client it owns. */
export interface RedisConnection<C = IoRedisConnectionClient> {
  readonly store: RedisStore;
  /** The client (for commands of your own; `close` ends it). */
  readonly client: C;
  /** Ends the connection (`QUIT`, then a hard disconnect if Redis does not answer). */
  close(): Promise<void>;
}

/** A client of either library as this module drives it: connect, end gracefully, drop. */
interface Owned {
  /** What the store is given. */
  readonly client: IoRedisConnectionClient | NodeRedisConnectionClient;
  connect(): Promise<unknown>;
  quit(): Promise<unknown>;
  drop(): void;
}

interface Listening {
  on(event: 'error', listener: (error: unknown) => void): unknown;
}
type IoRedisConstructor = new (
  url: string,
  options: Record<string, unknown>,
) => IoRedisConnectionClient & Listening & { connect(): Promise<void> };
type NodeRedisFactory = (
  options: Record<string, unknown>,
) => NodeRedisConnectionClient & Listening & { connect(): Promise<unknown> };

/** A command never waits for a reconnection: the store answers locally meanwhile. */
const reconnectDelay = (attempt: number): number => Math.min(attempt * 100, 1000);

async function open(url: string, library: RedisLibrary, connectTimeout: number): Promise<Owned> {
  if (library === 'node-redis') {
    const { createClient } = (await import('redis')) as unknown as {
      createClient: NodeRedisFactory;
    };
    const client = createClient({
      url,
      disableOfflineQueue: true,
      socket: {
        connectTimeout,
        reconnectStrategy: (retries: number) => reconnectDelay(retries + 1),
      },
    });
    // The store reports failures through onStatus; without a listener node-redis would throw them.
    client.on('error', () => {});
    return {
      client,
      connect: () => client.connect(),
      quit: () => client.close(),
      drop: () => client.destroy(),
    };
  }
  const { Redis } = (await import('ioredis')) as unknown as { Redis: IoRedisConstructor };
  const client = new Redis(url, {
    lazyConnect: true,
    connectTimeout,
    maxRetriesPerRequest: 1,
    retryStrategy: reconnectDelay,
  });
  // The store reports failures through onStatus; without a listener ioredis would print them.
  client.on('error', () => {});
  return {
    client,
    connect: () => client.connect(),
    quit: () => client.quit(),
    drop: () => client.disconnect(),
  };
}

/**
 * Connects to `url` (`redis://[user:password@]host:port[/db]` or `rediss://`)
 * with ioredis (or node-redis: `library: 'node-redis'`) and returns a
 * {@link RedisStore} over that connection. Rejects (with the URL's password
 * redacted) if Redis cannot be reached within `connectTimeout`. The library
 * is loaded on first use.
 * @example
 * const { store, close } = await connectRedisStore(process.env.REDIS_URL!);
 * const fetch = createFetch({ store });
 * // … on shutdown:
 * await close();
 */
export function connectRedisStore(
  url: string,
  options: ConnectRedisStoreOptions & { library: 'node-redis' },
): Promise<RedisConnection<NodeRedisConnectionClient>>;
export function connectRedisStore(
  url: string,
  options?: ConnectRedisStoreOptions & { library?: 'ioredis' | undefined },
): Promise<RedisConnection>;
export function connectRedisStore(
  url: string,
  options?: ConnectRedisStoreOptions,
): Promise<RedisConnection<IoRedisConnectionClient | NodeRedisConnectionClient>>;
export async function connectRedisStore(
  url: string,
  options: ConnectRedisStoreOptions = {},
): Promise<RedisConnection<IoRedisConnectionClient | NodeRedisConnectionClient>> {
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
    'library',
  ]) as ConnectRedisStoreOptions;
  const library = o.library ?? 'ioredis';
  if (library !== 'ioredis' && library !== 'node-redis') {
    throw new TypeError(
      `connectRedisStore.library must be 'ioredis' or 'node-redis', got ${describe(library)}`,
    );
  }
  const connectTimeout = checkNumber('connectRedisStore.connectTimeout', o.connectTimeout ?? 5000, {
    min: 0,
    exclusiveMin: true,
  });
  const secrets = parsed.password === '' ? [] : [parsed.password, safeDecode(parsed.password)];
  const owned = await open(url, library, connectTimeout);
  const { client } = owned;
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
      owned.connect().then(
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
    owned.drop();
    throw new Error(
      `connectRedisStore: cannot connect to ${redactUrl(url)}: ${redactError(error, secrets)}`,
    );
  }
  let closed: Promise<void> | undefined;
  return {
    store,
    client,
    close(): Promise<void> {
      closed ??= quit(owned);
      return closed;
    },
  };
}

async function quit(client: Owned): Promise<void> {
  try {
    await Promise.race([
      client.quit(),
      new Promise((_, reject) => setTimeout(reject, 1000).unref?.()),
    ]);
  } catch {
    // Redis gone or slow: drop the socket.
  } finally {
    client.drop();
  }
}

function safeDecode(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}
