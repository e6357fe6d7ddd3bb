/**
 * A real redis-server for the fleet tests: started on a free port of
 * 127.0.0.1 with no persistence, killed after. It runs under a tiny `sh`
 * guard that kills it when its stdin closes, so it dies with the test process
 * even if that one is killed. `REDIS_URL` instead points the tests at a Redis
 * of yours (the kill/restart tests then need the binary too).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { type AddressInfo, connect, createServer } from 'node:net';

const BINARY = process.env.REDIS_SERVER ?? 'redis-server';
const EXTERNAL = process.env.REDIS_URL;

function hasBinary(): boolean {
  const probe = spawnSync(BINARY, ['--version'], { stdio: 'ignore' });
  return probe.status === 0;
}

/** Can the suite run here? `binary`: we can start (and kill) our own server. */
export const redisAvailable: { any: boolean; binary: boolean } = (() => {
  const binary = hasBinary();
  return { any: binary || EXTERNAL !== undefined, binary };
})();

const LOUD = `
################################################################################
#  The Redis suite is SKIPPED: no \`${BINARY}\` on PATH and no REDIS_URL.
#  Install redis-server (apt-get install redis-server) or set REDIS_URL.
################################################################################`;

/**
 * Call once at the top of a Redis test file: warns loudly when the suite
 * cannot run, and under CI=true throws (the file fails instead of skipping).
 */
export function requireRedis(needBinary = false): boolean {
  const ok = needBinary ? redisAvailable.binary : redisAvailable.any;
  if (ok) return true;
  if (process.env.CI === 'true') {
    throw new Error(`CI=true and the Redis suite cannot run:${LOUD}`);
  }
  console.warn(LOUD);
  return false;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Resolves once Redis answers PING on `port`, within `ms`. */
async function answers(host: string, port: number, ms = 10_000): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect(port, host);
      socket.setTimeout(500);
      let data = '';
      socket.on('connect', () => socket.write('PING\r\n'));
      socket.on('data', (chunk) => {
        data += chunk.toString();
        if (data.includes('\r\n')) {
          socket.destroy();
          resolve(data.startsWith('+PONG'));
        }
      });
      socket.on('timeout', () => {
        socket.destroy();
        resolve(false);
      });
      socket.on('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > until) throw new Error(`redis on ${host}:${port} did not answer`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export interface RedisServer {
  /** `redis://127.0.0.1:PORT`. */
  readonly url: string;
  readonly port: number;
  /** Our own process (false under REDIS_URL). */
  readonly owned: boolean;
  /** SIGKILLs redis-server (owned only); resolves when it is gone. */
  kill(): Promise<void>;
  /** SIGSTOP: connections stay open, nothing is answered (owned only). */
  freeze(): void;
  /** SIGCONT after `freeze`. */
  thaw(): void;
  /** Starts it again on the same port, empty (owned only). */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts our own redis-server (or uses REDIS_URL). `extra` arguments go to
 * redis-server and force our own server (a cluster node, say).
 */
export async function startRedis(extra: string[] = []): Promise<RedisServer> {
  if (EXTERNAL !== undefined && !redisAvailable.binary && extra.length === 0) {
    const url = new URL(EXTERNAL);
    return {
      url: EXTERNAL,
      port: Number(url.port || 6379),
      owned: false,
      kill: () => Promise.reject(new Error('REDIS_URL: cannot kill a Redis we do not own')),
      restart: () => Promise.reject(new Error('REDIS_URL: cannot restart a Redis we do not own')),
      freeze: () => {
        throw new Error('REDIS_URL: cannot freeze a Redis we do not own');
      },
      thaw: () => {},
      stop: () => Promise.resolve(),
    };
  }
  const port = await freePort();
  let guard: ChildProcess | undefined;
  let pid = 0;
  const launch = async (): Promise<void> => {
    // sh keeps redis-server's pid, then waits on stdin: EOF (our exit, or stop) kills it.
    const script = `"$0" "$@" >/dev/null 2>&1 & pid=$!; echo $pid; read _ignored; kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null; exit 0`;
    const args = [
      '-c',
      script,
      BINARY,
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--daemonize',
      'no',
      ...extra.map((arg) => arg.replaceAll('{port}', String(port))),
    ];
    const child = spawn('sh', args, { stdio: ['pipe', 'pipe', 'inherit'] });
    guard = child;
    pid = await new Promise<number>((resolve, reject) => {
      let out = '';
      child.stdout?.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('\n')) resolve(Number(out.trim()));
      });
      child.once('exit', () => reject(new Error('redis-server guard exited early')));
    });
    await answers('127.0.0.1', port);
  };
  const end = async (): Promise<void> => {
    const child = guard;
    guard = undefined;
    if (child === undefined || child.exitCode !== null) return;
    const gone = new Promise((resolve) => child.once('exit', resolve));
    child.stdin?.end();
    await gone;
  };
  await launch();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    owned: true,
    async kill() {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
      // The guard reaps it and exits.
      await end();
    },
    async restart() {
      await end();
      await launch();
    },
    freeze() {
      process.kill(pid, 'SIGSTOP');
    },
    thaw() {
      process.kill(pid, 'SIGCONT');
    },
    stop: end,
  };
}
