/**
 * The two client libraries the store supports, for suites that run once per
 * library (`describe.each(LIBRARIES)`): the client under test is made here;
 * the tests' own inspection of Redis (INFO, GET, SCRIPT FLUSH) stays on an
 * ioredis client of their own.
 */
import { Cluster, Redis } from 'ioredis';
import { createClient, createCluster } from 'redis';
import type { RedisLibrary } from '../../../src/redis/connect.js';
import type { NodeRedisClient } from '../../../src/redis/node-redis.js';
import type { RedisScriptClient } from '../../../src/redis/options.js';

export const LIBRARIES: readonly RedisLibrary[] = ['ioredis', 'node-redis'];

/** A client under test, and how to drop it. */
export interface TestClient {
  readonly client: RedisScriptClient | NodeRedisClient;
  /** Resolves once the client has connected (and, for node-redis, finished its handshake). */
  readonly connected: Promise<unknown>;
  /** `status` of ioredis; `isReady`/`isOpen` of node-redis, as `ready`, `open` or `closed`. */
  state(): string;
  end(): void;
}

/** A client of `library` to `url`, connecting in the background (not awaited). */
export function openClient(library: RedisLibrary, url: string): TestClient {
  if (library === 'ioredis') {
    const client = new Redis(url);
    client.on('error', () => {});
    return {
      client,
      connected: client.status === 'ready' ? Promise.resolve() : ready(client),
      state: () => client.status,
      end: () => client.disconnect(),
    };
  }
  const client = createClient({ url });
  client.on('error', () => {});
  const connected = client.connect();
  connected.catch(() => {});
  return {
    client,
    connected,
    state: () => (client.isReady ? 'ready' : client.isOpen ? 'open' : 'closed'),
    end: () => client.destroy(),
  };
}

function ready(client: Redis | Cluster): Promise<void> {
  return new Promise((resolve) => client.once('ready', () => resolve()));
}

/** A cluster client of `library` over the given master ports of 127.0.0.1, connected. */
export async function openCluster(library: RedisLibrary, ports: number[]): Promise<TestClient> {
  if (library === 'ioredis') {
    const client = new Cluster(ports.map((port) => ({ host: '127.0.0.1', port })));
    client.on('error', () => {});
    const connected = ready(client);
    await connected;
    return { client, connected, state: () => client.status, end: () => client.disconnect() };
  }
  const client = createCluster({
    rootNodes: ports.map((port) => ({ url: `redis://127.0.0.1:${port}` })),
  });
  client.on('error', () => {});
  const connected = client.connect();
  await connected;
  return {
    client,
    connected,
    state: () => (client.isReady ? 'ready' : client.isOpen ? 'open' : 'closed'),
    end: () => client.destroy(),
  };
}
