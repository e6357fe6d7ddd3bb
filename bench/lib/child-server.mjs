/**
 * Starts bench/lib/server.mjs in its own process (so that its CPU time is not
 * charged to the client measured) and talks to it over IPC.
 *
 *   const server = await startServer({ name: 'fetch-overhead', maxSeconds, bodyBytes });
 *   const { requests, connections, cpu } = await server.stats();
 *   server.stop();
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export async function startServer({ name, maxSeconds, bodyBytes }) {
  let stopped = false;
  const child = fork(
    fileURLToPath(new URL('./server.mjs', import.meta.url)),
    [String(maxSeconds), String(bodyBytes)],
    // execArgv: [] keeps flags such as --cpu-prof on the client only.
    { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], execArgv: [] },
  );
  const port = await new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`server exited early with code ${code}`)));
    child.once('message', (message) => {
      if (message?.type === 'listening') resolve(message.port);
      else reject(new Error(`unexpected message from the server: ${JSON.stringify(message)}`));
    });
  });
  child.removeAllListeners('exit');
  child.on('exit', (code, signal) => {
    if (!stopped) {
      console.error(`${name}: the server exited during the run (${code ?? signal})`);
      process.exit(1);
    }
  });
  return {
    port,
    stats: () =>
      new Promise((resolve) => {
        child.once('message', resolve);
        child.send({ type: 'stats' });
      }),
    stop() {
      stopped = true;
      child.disconnect();
    },
  };
}
