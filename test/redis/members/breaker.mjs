// Fleet member: sends `input.requests` GETs (all at once) through createFetch
// with the given breaker options; reports how each ended.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

export default async function breaker({ store, input }) {
  const { createFetch } = await import(pathToFileURL(join(input.dist, 'index.js')).href);
  const changes = [];
  const fetch = createFetch({
    store,
    retry: false,
    budget: false,
    rateLimit: false,
    breaker: input.breaker,
    on: { breakerStateChange: (e) => changes.push(`${e.from}>${e.to}`) },
  });
  // With `input.refused` (a Redis key): each call that ends without a response counts itself
  // there, so that the test can hold the probe until every other caller has been answered.
  let counter;
  if (input.refused !== undefined) {
    const { Redis } = await import('ioredis');
    counter = new Redis(input.redis);
  }
  const outcomes = await Promise.all(
    Array.from({ length: input.requests }, (_, i) =>
      fetch(`${input.url}/${input.tag}/${i}`).then(
        async (res) => {
          await res.arrayBuffer();
          return String(res.status);
        },
        async (error) => {
          await counter?.incr(input.refused);
          return error.code ?? 'error';
        },
      ),
    ),
  );
  await counter?.quit();
  // The breaker records an outcome after the response is handed back: let those land.
  await new Promise((resolve) => setTimeout(resolve, 300));
  const counts = {};
  for (const o of outcomes) counts[o] = (counts[o] ?? 0) + 1;
  return { counts, changes };
}
