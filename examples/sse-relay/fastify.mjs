#!/usr/bin/env node
/**
 * Relaying an LLM stream to a browser with Fastify:
 *
 *   npm run build && node examples/sse-relay/fastify.mjs
 *   curl -N -X POST http://127.0.0.1:3000/chat -H 'content-type: application/json' -d '{"prompt":"hi"}'
 *
 * The handler takes the raw response over (`reply.hijack()`) and hands it to
 * `pipeEvents`. `disconnectSignal(reply.raw)` aborts the upstream request the
 * moment the client leaves, even while the upstream is silent.
 */
import { fileURLToPath } from 'node:url';
import Fastify from 'fastify';
import { createFetch } from 'staunch';
import { disconnectSignal, firstEvent, pipeEvents, readEvents } from 'staunch/sse';
import { startUpstream } from './upstream.mjs';

export function createApp({
  upstream,
  fetch = createFetch({ fetch: firstEvent(globalThis.fetch) }),
  onRelayEnd = () => {},
}) {
  const app = Fastify();
  app.post('/chat', async (request, reply) => {
    reply.hijack();
    const signal = disconnectSignal(reply.raw);
    let res;
    try {
      res = await fetch(upstream, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(request.body ?? {}),
        signal,
      });
    } catch (error) {
      if (!signal.aborted) reply.raw.writeHead(502).end(String(error.code ?? error.name));
      return;
    }
    if (res.status !== 200) {
      reply.raw.writeHead(502, { 'content-type': 'application/json' }).end(await res.text());
      return;
    }
    // reason: 'end' | 'disconnect' | 'error'; log it with the usage you collected.
    onRelayEnd(await pipeEvents(readEvents(res, { signal }), reply.raw));
  });
  return app;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const upstream = await startUpstream({ log: console.log });
  const app = createApp({ upstream: upstream.url, onRelayEnd: (r) => console.log('relay', r) });
  const url = await app.listen({ port: Number(process.env.PORT ?? 3000), host: '127.0.0.1' });
  console.log(`relay on ${url}/chat (upstream ${upstream.url}); Ctrl-C to stop`);
}
