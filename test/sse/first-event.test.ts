/**
 * firstEvent under createFetch, against real servers: a stream whose first
 * event is an error, or that drops before any event, is retried like a failed
 * attempt (the server counts the attempts); once an event was handed over, a
 * drop surfaces as an EventStreamError and nothing is sent again.
 */
import type { ServerResponse } from 'node:http';
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { NetworkError, type RetryEvent } from '../../src/index.js';
import { EventStreamError } from '../../src/sse/errors.js';
import { FIRST_EVENT_HEADER, firstEvent, providerErrorStatus } from '../../src/sse/first-event.js';
import { readEvents } from '../../src/sse/read.js';
import { client } from '../helpers/harness.js';
import { httpServer, type RawServer, rawServer, type TestServer } from '../helpers/server.js';

const servers: (TestServer | RawServer)[] = [];
const stops: (() => void)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) stop();
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

const OVERLOADED =
  'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n';
const STREAM =
  'event: message_start\ndata: {"type":"message_start"}\n\nevent: ping\ndata: {}\n\n' +
  'event: content_block_delta\ndata: {"text":"hi"}\n\nevent: message_stop\ndata: {}\n\n';

function sse(res: ServerResponse, body: string): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'request-id': 'req_1' });
  res.end(body);
}

function staunch(retries: RetryEvent[] = []) {
  const c = client(
    { retry: { attempts: 3 }, on: { retry: (e) => retries.push(e) } },
    { transport: firstEvent(fetch) as typeof fetch },
  );
  stops.push(c.stop);
  return c;
}

async function collect(res: Response): Promise<string[]> {
  const out: string[] = [];
  for await (const e of readEvents(res)) out.push(e.event);
  return out;
}

const RESET_HEAD =
  'HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n';

describe('firstEvent', () => {
  it('a POST whose first event is overloaded_error is retried; the caller gets the next stream whole', async () => {
    const server = await httpServer((_req, res, i) => sse(res, i === 0 ? OVERLOADED : STREAM));
    servers.push(server);
    const retries: RetryEvent[] = [];
    const { fetch } = staunch(retries);
    const res = await fetch(`${server.url}/v1/messages`, { method: 'POST', body: '{}' });
    expect(res.status).toBe(200);
    expect(res.headers.get('request-id')).toBe('req_1');
    expect(res.url).toBe(`${server.url}/v1/messages`);
    expect(await collect(res)).toEqual([
      'message_start',
      'ping',
      'content_block_delta',
      'message_stop',
    ]);
    expect(server.received.map((r) => r.method)).toEqual(['POST', 'POST']);
    expect(retries.map((r) => r.status)).toEqual([529]);
  });

  it('pings before the error are not progress: still retried', async () => {
    const server = await httpServer((_req, res, i) =>
      sse(res, i === 0 ? `: hello\nevent: ping\ndata: {}\n\n${OVERLOADED}` : STREAM),
    );
    servers.push(server);
    const { fetch } = staunch();
    const res = await fetch(server.url, { method: 'POST', body: '{}' });
    expect(res.status).toBe(200);
    expect(server.received).toHaveLength(2);
  });

  it('when retries run out, the error comes back as a 529 with its JSON as the body', async () => {
    const server = await httpServer((_req, res) => sse(res, OVERLOADED));
    servers.push(server);
    const { fetch } = staunch();
    const res = await fetch(server.url, { method: 'POST', body: '{}' });
    expect(res.status).toBe(529);
    expect(res.headers.get(FIRST_EVENT_HEADER)).toBe('error');
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(await res.json()).toEqual({
      type: 'error',
      error: { type: 'overloaded_error', message: 'Overloaded' },
    });
    expect(server.received).toHaveLength(3);
  });

  it('a first event that is a client error is not retried (400, body kept)', async () => {
    const server = await httpServer((_req, res) => {
      // The 200's own x-should-retry spoke of the stream: it must not carry over to the 400.
      res.writeHead(200, { 'content-type': 'text/event-stream', 'x-should-retry': 'true' });
      res.end('data: {"error":{"type":"invalid_request_error","message":"bad"}}\n\n');
    });
    servers.push(server);
    const { fetch } = staunch();
    const res = await fetch(server.url, { method: 'POST', body: '{}' });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { message: string } }).error.message).toBe('bad');
    expect(server.received).toHaveLength(1);
  });

  it('a GET stream reset before any event is retried (replayable)', async () => {
    const server = await rawServer((socket, i) => {
      socket.once('data', () => {
        if (i === 0) {
          socket.write(`${RESET_HEAD}5\r\n: hi\n\r\n`, () => socket.resetAndDestroy());
        } else {
          socket.end(`${RESET_HEAD}${STREAM.length.toString(16)}\r\n${STREAM}\r\n0\r\n\r\n`);
        }
      });
    });
    servers.push(server);
    const retries: RetryEvent[] = [];
    const { fetch } = staunch(retries);
    const res = await fetch(server.url);
    expect(await collect(res)).toHaveLength(4);
    expect(server.connections).toBe(2);
    expect(retries.map((r) => r.reason)).toEqual(['maybe-sent']);
  });

  it('a POST stream reset before any event is not retried: it may have been processed', async () => {
    const server = await rawServer((socket) => {
      socket.once('data', () => socket.write(RESET_HEAD, () => socket.resetAndDestroy()));
    });
    servers.push(server);
    const { fetch } = staunch();
    const error = await fetch(server.url, { method: 'POST', body: '{}' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NetworkError);
    expect((error as NetworkError).cause).toBeInstanceOf(EventStreamError);
    expect(server.connections).toBe(1);
  });

  it('a drop after the first event surfaces typed in the body and is never retried', async () => {
    const head = 'event: message_start\ndata: {}\n\n';
    const server = await rawServer((socket) => {
      socket.once('data', () => {
        socket.write(`${RESET_HEAD}${head.length.toString(16)}\r\n${head}\r\n`);
        setImmediate(() => socket.write('9\r\ndata: par', () => socket.resetAndDestroy()));
      });
    });
    servers.push(server);
    const { fetch } = staunch();
    const res = await fetch(server.url);
    const seen: string[] = [];
    const error = await (async () => {
      for await (const e of readEvents(res)) seen.push(e.event);
    })().catch((e: unknown) => e);
    expect(seen).toEqual(['message_start']);
    expect(error).toBeInstanceOf(EventStreamError);
    expect(server.connections).toBe(1);
  });

  it('a gzipped stream: the handed-over response no longer claims an encoding', async () => {
    const server = await httpServer((_req, res, i) => {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'content-encoding': 'gzip' });
      res.end(gzipSync(i === 0 ? OVERLOADED : STREAM));
    });
    servers.push(server);
    const { fetch } = staunch();
    const res = await fetch(server.url, { method: 'POST', body: '{}' });
    expect(res.headers.get('content-encoding')).toBeNull();
    expect(await collect(res)).toHaveLength(4);
    expect(server.received).toHaveLength(2);
  });

  it('leaves other responses untouched', async () => {
    const server = await httpServer((_req, res, i) => {
      if (i === 0) res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      else res.writeHead(503, { 'content-type': 'text/event-stream' }).end(OVERLOADED);
    });
    servers.push(server);
    const transport = firstEvent(fetch);
    const json = await transport(server.url, {});
    expect(await json.json()).toEqual({ ok: true });
    const failed = await transport(server.url, {});
    expect(failed.status).toBe(503);
    expect(await failed.text()).toBe(OVERLOADED);
  });

  it('maps the providers’ error shapes to their statuses', () => {
    const e = (event: string, data: string) => ({ event, data, id: '', retry: undefined });
    expect(providerErrorStatus(e('error', '{"error":{"type":"overloaded_error"}}'))).toBe(529);
    expect(providerErrorStatus(e('message', '{"error":{"code":"rate_limit_exceeded"}}'))).toBe(429);
    expect(providerErrorStatus(e('message', '{"type":"error","error":{"type":"api_error"}}'))).toBe(
      500,
    );
    expect(providerErrorStatus(e('error', 'not json'))).toBe(502);
    expect(providerErrorStatus(e('message', '{"choices":[]}'))).toBeUndefined();
    expect(providerErrorStatus(e('message', '{"error":null}'))).toBeUndefined();
    expect(providerErrorStatus(e('message', 'hello'))).toBeUndefined();
  });

  it('rejects bad options with the option named', () => {
    expect(() => firstEvent(fetch, { maxBytes: 0 })).toThrow(/maxBytes/);
    expect(() => firstEvent('x' as never)).toThrow(TypeError);
    expect(() => firstEvent(fetch, { skip: 1 as never })).toThrow(/skip/);
  });
});
