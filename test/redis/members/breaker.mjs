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
  const outcomes = await Promise.all(
    Array.from({ length: input.requests }, (_, i) =>
      fetch(`${input.url}/${input.tag}/${i}`).then(
        async (res) => {
          await res.arrayBuffer();
          return String(res.status);
        },
        (error) => error.code ?? 'error',
      ),
    ),
  );
  // The breaker records an outcome after the response is handed back: let those land.
  await new Promise((resolve) => setTimeout(resolve, 300));
  const counts = {};
  for (const o of outcomes) counts[o] = (counts[o] ?? 0) + 1;
  return { counts, changes };
}
