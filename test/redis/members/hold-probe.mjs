// Fleet member: takes the half-open probe of a breaker key, then dies without reporting.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

export default async function holdProbe({ store, input }) {
  const ops = await import(pathToFileURL(join(input.dist, 'policy/breaker/ops.js')).href);
  const admission = await store.run(
    input.key,
    ops.breakerAdmit,
    { cfg: input.cfg, leaseMs: input.leaseMs },
    Date.now(),
  );
  if (!admission.ok || admission.probe === null) return { admission };
  process.kill(process.pid, 'SIGKILL');
  return null;
}
