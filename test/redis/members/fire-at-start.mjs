// Fleet member: creates its own ioredis client and, without waiting for it to
// connect (unless `input.connectFirst`: the baseline of bench/redis-fleet.mjs),
// sends `input.requests` GETs at once through createFetch with a fixed rate
// limit shared through the Redis store. Reports how each ended and what the
// store said.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';

export default async function fireAtStart({ input, index }) {
  const dist = (name) => import(pathToFileURL(join(input.dist, name)).href);
  const [{ createFetch }, { redisStore }] = await Promise.all([
    dist('index.js'),
    dist('redis/index.js'),
  ]);
  const client = new Redis(input.redis);
  client.on('error', () => {});
  if (input.connectFirst) await new Promise((resolve) => client.once('ready', resolve));
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
    client.disconnect();
  }
}
