// Fleet member: creates its own client (ioredis, or node-redis with
// `input.library: 'node-redis'`) and, without waiting for it to
// connect (unless `input.connectFirst`: the baseline of bench/redis-fleet.mjs),
// sends `input.requests` GETs at once through createFetch with a fixed rate
// limit shared through the Redis store. Reports how each ended and what the
// store said.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';

/** The client, connecting; `ready` resolves once it can take commands; `end` drops it. */
async function open(library, url) {
  if (library === 'node-redis') {
    // Loaded only here: the ioredis runs load nothing more than before.
    const { createClient } = await import('redis');
    const client = createClient({ url });
    client.on('error', () => {});
    const ready = client.connect();
    ready.catch(() => {});
    return { client, ready, end: () => client.destroy() };
  }
  const client = new Redis(url);
  client.on('error', () => {});
  const ready = new Promise((resolve) => client.once('ready', resolve));
  return { client, ready, end: () => client.disconnect() };
}

export default async function fireAtStart({ input, index }) {
  const dist = (name) => import(pathToFileURL(join(input.dist, name)).href);
  const [{ createFetch }, { redisStore }] = await Promise.all([
    dist('index.js'),
    dist('redis/index.js'),
  ]);
  const { client, ready, end } = await open(input.library, input.redis);
  if (input.connectFirst) await ready;
  const store = redisStore({ client, prefix: input.prefix, ...input.storeOptions });
  const statuses = [];
  store.onStatus((s) => statuses.push(s.error ?? s.status));
  const fetch = createFetch({
    store,
    retry: false,
    rateLimit: input.rateLimit,
    timeout: { total: 60_000 },
  });
  try {
    const outcomes = await Promise.all(
      Array.from({ length: input.requests }, (_, i) =>
        fetch(`${input.url}/${index}/${i}`).then(
          async (res) => {
            await res.arrayBuffer();
            return String(res.status);
          },
          (error) => error.code ?? 'error',
        ),
      ),
    );
    const counts = {};
    for (const o of outcomes) counts[o] = (counts[o] ?? 0) + 1;
    return { counts, statuses };
  } finally {
    end();
  }
}
