/**
 * A redis-server of the Redis benchmarks' own, on a free port of 127.0.0.1,
 * no persistence, under a `sh` guard that kills it when our stdin pipe
 * closes (so it dies with the benchmark). `REDIS_URL` set: that Redis instead.
 */
import { spawn, spawnSync } from 'node:child_process';
import { connect, createServer } from 'node:net';

async function freePort() {
  const server = createServer();
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address();
  await new Promise((r) => server.close(r));
  return port;
}

/** Does a Redis answer PING on this port? */
function answers(port) {
  return new Promise((done) => {
    const socket = connect(port, '127.0.0.1');
    socket.setTimeout(500, () => {
      socket.destroy();
      done(false);
    });
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (d) => {
      socket.destroy();
      done(d.toString().startsWith('+PONG'));
    });
    socket.on('error', () => done(false));
  });
}

/** `{ url, stop }`; exits the process with a message when there is neither a binary nor REDIS_URL. */
export async function startRedis() {
  if (process.env.REDIS_URL) return { url: process.env.REDIS_URL, stop: async () => {} };
  if (spawnSync('redis-server', ['--version']).status !== 0) {
    console.error('no redis-server on PATH and no REDIS_URL');
    process.exit(1);
  }
  const port = await freePort();
  const script = `"$0" "$@" >/dev/null 2>&1 & pid=$!; read _x; kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null; exit 0`;
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];
  const guard = spawn('sh', ['-c', script, 'redis-server', ...args], {
    stdio: ['pipe', 'ignore', 'inherit'],
  });
  for (let i = 0; !(await answers(port)); i++) {
    if (i > 200) throw new Error('redis-server did not start');
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url: `redis://127.0.0.1:${port}`,
    stop: () =>
      new Promise((r) => {
        guard.once('exit', r);
        guard.stdin.end();
      }),
  };
}
