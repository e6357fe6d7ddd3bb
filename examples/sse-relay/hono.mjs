#!/usr/bin/env node
/**
 * Relaying an LLM stream to a browser with Hono, on Node:
 *
 *   npm run build && node examples/sse-relay/hono.mjs
 *   curl -N -X POST http://127.0.0.1:3000/chat -d '{"prompt":"hi"}'
 *
 * The upstream call goes through staunch with `firstEvent`: a stream whose
 * first event is an error (overloaded) is retried before anything reaches
 * the browser. When the browser disconnects, Hono aborts `c.req.raw.signal`
 * and cancels the response stream; either one aborts the upstream request.
 */
import { fileURLToPath } from 'node:url';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { createFetch } from 'staunch';
import { EVENT_STREAM_HEADERS, firstEvent, readEvents, toEventStream } from 'staunch/sse';
import { startUpstream } from './upstream.mjs';

export function createApp({
  upstream,
  fetch = createFetch({ fetch: firstEvent(globalThis.fetch) }),
}) {
  const app = new Hono();
  app.post('/chat', async (c) => {
    const signal = c.req.raw.signal; // aborts when the client disconnects
    const res = await fetch(upstream, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: await c.req.text(),
      signal,
    });
    if (res.status !== 200) {
      return c.json({ error: `upstream answered ${res.status}`, detail: await res.text() }, 502);
    }
    const events = readEvents(res, { signal });
    return new Response(toEventStream(events, { signal }), { headers: EVENT_STREAM_HEADERS });
  });
  return app;
}

/** Serves `app` on 127.0.0.1; resolves with its URL and a close function. */
export function listen(app, port = 0) {
  return new Promise((resolve) => {
    const server = serve({ fetch: app.fetch, port, hostname: '127.0.0.1' }, (info) =>
      resolve({
        url: `http://127.0.0.1:${info.port}`,
        close: () => new Promise((done) => server.close(done)),
      }),
    );
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const upstream = await startUpstream({ log: console.log });
  const { url } = await listen(
    createApp({ upstream: upstream.url }),
    Number(process.env.PORT ?? 3000),
  );
  console.log(`relay on ${url}/chat (upstream ${upstream.url}); Ctrl-C to stop`);
}
