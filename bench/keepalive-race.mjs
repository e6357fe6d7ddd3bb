/**
 * How many keyless POSTs does a server's idle keep-alive close cost?
 *
 * A raw HTTP/1.1 server in a child process closes a connection idle for
 * `--idle` ms (close(2), no `Keep-Alive` hint, as nginx with a short
 * `keepalive_timeout`). The work comes from outside, as a service's
 * incoming requests do: the server tells the client over IPC to send the
 * next POST at `--idle` ms ± 1.5 ms after its last answer, so the client
 * dispatches from an I/O callback, about when the server closes. Each POST
 * carries a sequence number; the server counts what it read.
 *
 *   npm run build && node bench/keepalive-race.mjs [--posts 450] [--idle 20]
 *
 * Prints, per client: POSTs that failed, how many of those the server had
 * read, and POSTs the server read twice (must be 0). The clients: a bare
 * undici `Agent`, staunch's `createAgent` and `createFetch` with their
 * defaults, and `createAgent` with `keepAlive.idle` 5 ms below the server's.
 */
import { fork } from 'node:child_process';
import { createServer } from 'node:net';
import { parseArgs } from 'node:util';

if (process.argv[2] === 'server') serve(Number(process.argv[3]));
else await main();

function serve(idleMs) {
  const read = new Map();
  let lastAnswer = 0;
  let next;
  const go = (seq) => {
    clearTimeout(next);
    const due = lastAnswer + idleMs + (Math.random() * 3 - 1.5);
    next = setTimeout(() => process.send({ type: 'go', seq }), Math.max(0, due - Date.now()));
  };
  const server = createServer((socket) => {
    let buffer = '';
    let idle;
    socket.on('error', () => {});
    socket.on('close', () => clearTimeout(idle));
    socket.on('data', (chunk) => {
      clearTimeout(idle);
      buffer += chunk.toString('latin1');
      for (;;) {
        const end = buffer.indexOf('\r\n\r\n');
        if (end === -1) return;
        const length = Number(/content-length: *(\d+)/i.exec(buffer.slice(0, end))?.[1] ?? 0);
        if (buffer.length < end + 4 + length) return;
        const body = buffer.slice(end + 4, end + 4 + length);
        buffer = buffer.slice(end + 4 + length);
        read.set(body, (read.get(body) ?? 0) + 1);
        socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok');
        lastAnswer = Date.now();
        idle = setTimeout(() => socket.destroy(), idleMs);
      }
    });
  });
  process.on('message', (message) => {
    if (message.type === 'start' || message.type === 'done') go(message.seq);
    else if (message.type === 'stats') {
      process.send({ type: 'stats', read: [...read] });
      read.clear();
    }
  });
  server.listen(0, '127.0.0.1', () => process.send({ type: 'listening', ...server.address() }));
}

async function main() {
  const { values } = parseArgs({
    options: { posts: { type: 'string', default: '450' }, idle: { type: 'string', default: '20' } },
  });
  const posts = Number(values.posts);
  const idleMs = Number(values.idle);
  const { Agent, request } = await import('undici');
  const staunch = await import('../dist/undici/index.js');
  const child = fork(new URL(import.meta.url).pathname, ['server', String(idleMs)], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const { port } = await new Promise((resolve) => child.once('message', resolve));
  const url = `http://127.0.0.1:${port}/charge`;

  const clients = {
    'undici Agent': () => {
      const dispatcher = new Agent({ connections: 1 });
      return {
        send: (body) => post(request, url, body, dispatcher),
        close: () => dispatcher.close(),
      };
    },
    'staunch createAgent': () => {
      const dispatcher = staunch.createAgent({ connections: 1 });
      return {
        send: (body) => post(request, url, body, dispatcher),
        close: () => dispatcher.close(),
      };
    },
    'staunch, idle < server': () => {
      // keepAlive.idle below the server's idle timeout: the client closes first.
      const keepAlive = { idle: Math.max(1, idleMs - 5) };
      const dispatcher = staunch.createAgent({ connections: 1, keepAlive });
      return {
        send: (body) => post(request, url, body, dispatcher),
        close: () => dispatcher.close(),
      };
    },
    'staunch createFetch': () => {
      const fetch = staunch.createFetch({ connections: 1 });
      const send = async (body) => (await fetch(url, { method: 'POST', body })).text();
      return { send, close: () => fetch.dispatcher.close() };
    },
  };

  console.log(`${posts} keyless POSTs each; the server closes connections idle ${idleMs} ms`);
  for (const [name, make] of Object.entries(clients)) {
    const client = make();
    const failed = [];
    let seq = 0;
    await new Promise((resolve) => {
      const onMessage = async (message) => {
        if (message.type !== 'go') return;
        const body = `post-${message.seq}`;
        try {
          await client.send(body);
        } catch (error) {
          failed.push([body, innermostCode(error)]);
        }
        if (++seq === posts) {
          child.off('message', onMessage);
          resolve();
        } else child.send({ type: 'done', seq });
      };
      child.on('message', onMessage);
      child.send({ type: 'start', seq });
    });
    await client.close();
    child.send({ type: 'stats' });
    const { read } = await new Promise((resolve) => child.once('message', resolve));
    const counts = new Map(read);
    const readFailed = failed.filter(([body]) => counts.has(body)).length;
    const twice = read.filter(([, n]) => n > 1).length;
    const codes = [...new Set(failed.map(([, code]) => code))].join(', ') || '-';
    console.log(
      `${name.padEnd(23)} failed ${String(failed.length).padStart(3)} (${codes}), ` +
        `of which the server read ${readFailed}; read twice ${twice}; read ${counts.size}`,
    );
  }
  child.kill();
}

async function post(request, url, body, dispatcher) {
  const res = await request(url, { method: 'POST', body, dispatcher });
  return res.body.text();
}

/** The code nearest the socket: the last one along the `cause` chain. */
function innermostCode(error) {
  let code;
  for (let e = error; e != null; e = e.cause) code = e.code ?? code;
  return code;
}
