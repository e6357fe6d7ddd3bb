// Fleet member: `input.takes` concurrent token takes (maxWait 0) from one fixed bucket.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

export default async function takeTokens({ store, input }) {
  const ops = await import(pathToFileURL(join(input.dist, 'policy/rate/ops.js')).href);
  const statuses = [];
  store.onStatus?.((s) => statuses.push(s));
  const args = { cfg: input.cfg, maxWait: 0, epoch: null };
  const results = await Promise.all(
    Array.from({ length: input.takes }, () =>
      store.run(input.key, ops.rateAcquire, args, Date.now()),
    ),
  );
  return { granted: results.filter((r) => r.ok).length, statuses };
}
