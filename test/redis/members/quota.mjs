// Fleet member: `input.requests` GETs arriving every `input.interval` ms through
// createFetch with the defaults (adaptive rate limit), against a quota-limited upstream.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

export default async function quota({ store, input, index }) {
  const { createFetch } = await import(pathToFileURL(join(input.dist, 'index.js')).href);
  const statuses = [];
  store.onStatus?.((s) => statuses.push(s.error ?? s.status));
  const fetch = createFetch({ store, retry: 8, timeout: { total: 60_000 } });
  const start = Date.now();
  const outcomes = await Promise.all(
    Array.from({ length: input.requests }, async (_, i) => {
      await new Promise((resolve) => setTimeout(resolve, i * input.interval));
      try {
        const res = await fetch(`${input.url}/${index}/${i}`);
        await res.arrayBuffer();
        return res.status === 200 ? 'ok' : String(res.status);
      } catch (error) {
        return error.code ?? 'error';
      }
    }),
  );
  const counts = {};
  for (const o of outcomes) counts[o] = (counts[o] ?? 0) + 1;
  return { counts, statuses, ms: Date.now() - start };
}
