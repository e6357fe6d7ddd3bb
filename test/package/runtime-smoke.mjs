/**
 * The core entry on a runtime other than Node (Bun, Deno), with that
 * runtime's own fetch: a retried 503, a deadline, and the events. It imports
 * the build (dist/index.js), so build first. Exits 0 and prints one line when
 * every check holds, 1 otherwise.
 *
 *   npx -y bun@1.4.5 test/package/runtime-smoke.mjs
 *   npx -y deno@2.9.6 run --allow-net=127.0.0.1 --allow-read=. test/package/runtime-smoke.mjs
 *
 * The server is node:http (both runtimes provide it) on 127.0.0.1, port 0.
 */
import { createServer } from 'node:http';
import { constantBackoff, createFetch, DeadlineExceededError } from '../../dist/index.js';

const runtime =
  globalThis.Bun !== undefined
    ? `bun ${globalThis.Bun.version}`
    : globalThis.Deno !== undefined
      ? `deno ${globalThis.Deno.version.deno}`
      : `node ${process.versions.node}`;

// A bound on the whole run: a hang fails instead of waiting for CI's limit.
let phase = 'starting';
const guard = setTimeout(() => fail(`timed out after 20 s while ${phase}`), 20_000);
const failures = [];
function check(what, actual, expected) {
  if (actual !== expected) failures.push(`${what}: expected ${expected}, got ${actual}`);
}
function fail(message) {
  console.error(`runtime smoke on ${runtime}: ${message}`);
  process.exit(1);
}

const received = { '/flaky': 0, '/silent': 0 };
const server = createServer((req, res) => {
  received[req.url] = (received[req.url] ?? 0) + 1;
  if (req.url === '/silent') return; // never answers: the deadline must end it
  res.statusCode = received[req.url] === 1 ? 503 : 200;
  res.end(res.statusCode === 200 ? 'ok' : '');
});
await new Promise((done) => server.listen(0, '127.0.0.1', done));
const base = `http://127.0.0.1:${server.address().port}`;

try {
  const retries = [];
  const fetch = createFetch({
    retry: { attempts: 3, backoff: constantBackoff(0) },
    on: { retry: (e) => retries.push(e.status) },
  });
  phase = 'retrying a 503';
  const res = await fetch(`${base}/flaky`);
  check('status after a retried 503', res.status, 200);
  check('body', await res.text(), 'ok');
  check('requests the server got for /flaky', received['/flaky'], 2);
  check('retry events', retries.length, 1);

  phase = 'waiting for the deadline on a silent upstream';
  const error = await fetch(`${base}/silent`, { staunch: { timeout: { total: 200 } } }).then(
    () => undefined,
    (e) => e,
  );
  check(
    'a silent upstream past the deadline gives',
    error?.constructor?.name,
    'DeadlineExceededError',
  );
  check('instanceof DeadlineExceededError', error instanceof DeadlineExceededError, true);
} catch (error) {
  failures.push(`threw ${error?.stack ?? error}`);
} finally {
  server.closeAllConnections?.();
  server.close();
  clearTimeout(guard);
}

if (failures.length > 0) fail(failures.join('; '));
console.log(`runtime smoke on ${runtime}: core entry ok (retry, deadline, events)`);
