/**
 * One benchmark variant in its own process, driven by bench/lib/rounds.mjs over
 * IPC. A process per variant keeps what one variant loads out of the others:
 * npm undici installing its dispatcher under Node's global fetch, a
 * diagnostics-channel subscriber that makes undici publish for every request,
 * JIT and GC state.
 *
 * Messages from the parent:
 * - `{ type: 'setup', file, variant, url }`: imports `file` (a variants
 *   module), awaits `setup(variant, url)` (which returns `send()`: one
 *   request, body read, resolving to the status code), answers `{ type: 'ready' }`;
 * - `{ type: 'measure', duration, concurrency, skip }`: runs `concurrency`
 *   workers for `duration` s, answers `{ type: 'result', ok, failed, ms, cpu,
 *   error, late }`; with `skip` (ms, default 0) above 0, `late` is
 *   `{ ok, ms, cpu }` of the same slot from the first response completed
 *   `skip` ms or more after its start: the slot without its first part;
 * - `{ type: 'close' }`: awaits the module's `teardown()` and exits.
 * Exits by itself when the parent goes away, and after `maxSeconds` (argv[2]).
 */
import { performance } from 'node:perf_hooks';

const maxSeconds = Number(process.argv[2] ?? 600);
setTimeout(() => process.exit(3), maxSeconds * 1000).unref();
process.on('disconnect', () => process.exit(0));

let mod;
let send;

const millis = (cpu) => (cpu.user + cpu.system) / 1000;

async function measure(duration, concurrency, skip = 0) {
  let ok = 0;
  let failed = 0;
  let error;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const end = t0 + duration * 1000;
  // The count, clock and CPU at the first response completed `skip` ms in.
  let mark;
  const worker = async () => {
    let now = t0;
    while (now < end) {
      try {
        if ((await send()) === 200) ok++;
        else failed++;
      } catch (e) {
        failed++;
        error ??= String(e?.stack ?? e);
      }
      now = performance.now();
      if (mark === undefined && now - t0 >= skip) mark = { ok, t: now, cpu: process.cpuUsage() };
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const t1 = performance.now();
  const cpu = process.cpuUsage(cpu0);
  const result = { ok, failed, ms: t1 - t0, cpu: millis(cpu), error };
  if (skip > 0 && mark !== undefined) {
    result.late = { ok: ok - mark.ok, ms: t1 - mark.t, cpu: millis(process.cpuUsage(mark.cpu)) };
  }
  return result;
}

process.on('message', async (message) => {
  try {
    if (message.type === 'setup') {
      mod = await import(message.file);
      send = await mod.setup(message.variant, message.url);
      process.send({ type: 'ready', info: mod.info?.(message.variant) });
    } else if (message.type === 'measure') {
      process.send({
        type: 'result',
        ...(await measure(message.duration, message.concurrency, message.skip)),
      });
    } else if (message.type === 'close') {
      await mod?.teardown?.();
      process.exit(0);
    }
  } catch (error) {
    process.send({ type: 'error', error: String(error?.stack ?? error) });
  }
});
