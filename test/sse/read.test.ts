/**
 * readEvents over real connections: a node:http server that streams events in
 * odd chunks, a consumer that stops early (the server sees its socket close),
 * and a raw node:net server that resets the stream mid-event.
 */
import type { ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { EventStreamError } from '../../src/sse/errors.js';
import { readEvents } from '../../src/sse/read.js';
import { httpServer, type RawServer, rawServer, type TestServer } from '../helpers/server.js';
import { chunkStream, encoder } from './support.js';

const servers: (TestServer | RawServer)[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

function sseHead(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.flushHeaders();
}

describe('readEvents', () => {
  it('reads the events of a fetch Response, cut in odd places by the server', async () => {
    const server = await httpServer((_req, res) => {
      sseHead(res);
      const e = Buffer.from('é'); // two bytes, written apart
      for (const part of [
        'id: 1\r',
        '\ndata: a',
        e.subarray(0, 1),
        e.subarray(1),
        '\n\n',
        'data: b\n\ndata: c',
      ]) {
        res.write(part);
      }
      res.end();
    });
    servers.push(server);
    const reader = readEvents(await fetch(server.url));
    const events = [];
    for await (const e of reader) events.push([e.data, e.id]);
    // The last event has no final blank line: the standard discards it.
    expect(events).toEqual([
      ['aé', '1'],
      ['b', '1'],
    ]);
    expect(reader.lastEventId).toBe('1');
    expect(reader.events).toBe(2);
  });

  it('break cancels the response: the server sees its socket close', async () => {
    let closed!: () => void;
    const socketClosed = new Promise<void>((resolve) => {
      closed = resolve;
    });
    const server = await httpServer((req, res) => {
      sseHead(res);
      res.write('data: first\n\n');
      req.socket.on('close', closed);
      // Nothing more until the client leaves: a pending read must not keep it open.
    });
    servers.push(server);
    for await (const e of readEvents(await fetch(server.url))) {
      expect(e.data).toBe('first');
      break;
    }
    await socketClosed;
    expect(server.received).toHaveLength(1);
  });

  it('return() while a read is pending cancels the source at once', async () => {
    let cancelled = 0;
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(encoder.encode('data: 1\n\n'));
      },
      cancel() {
        cancelled++;
      },
    });
    const reader = readEvents(stream);
    expect((await reader.next()).value?.data).toBe('1');
    const pending = reader.next(); // waits for bytes that never come
    expect(await reader.return()).toEqual({ done: true, value: undefined });
    expect(await pending).toEqual({ done: true, value: undefined });
    expect(cancelled).toBe(1);
  });

  it('a reset mid-event throws an EventStreamError with the events so far and the cause', async () => {
    const server = await rawServer((socket) => {
      socket.once('data', () => {
        socket.write(
          'HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n',
        );
        const body = 'id: 5\ndata: one\n\ndata: tw';
        socket.write(`${body.length.toString(16)}\r\n${body}\r\n`, () => socket.resetAndDestroy());
      });
    });
    servers.push(server);
    const reader = readEvents(await fetch(server.url));
    const seen: string[] = [];
    const error = await (async () => {
      for await (const e of reader) seen.push(e.data);
    })().catch((e: unknown) => e);
    expect(seen).toEqual(['one']);
    expect(error).toBeInstanceOf(EventStreamError);
    const err = error as EventStreamError;
    expect(err.reason).toBe('interrupted');
    expect(err.events).toBe(1);
    expect(err.lastEventId).toBe('5');
    expect(err.cause).toBeInstanceOf(Error);
    expect(server.connections).toBe(1);
  });

  it("the caller's abort is rethrown as it is, not wrapped", async () => {
    const server = await httpServer((_req, res) => {
      sseHead(res);
      res.write('data: 1\n\n');
    });
    servers.push(server);
    const controller = new AbortController();
    const reason = new Error('caller gave up');
    const reader = readEvents(await fetch(server.url, { signal: controller.signal }), {
      signal: controller.signal,
    });
    expect((await reader.next()).value?.data).toBe('1');
    const next = reader.next();
    controller.abort(reason);
    await expect(next).rejects.toBe(reason);
  });

  it('reads a ReadableStream and an async iterable; a null body has no events', async () => {
    const { stream, cancelled } = chunkStream([encoder.encode('data: x\n'), encoder.encode('\n')]);
    const fromStream = [];
    for await (const e of readEvents(stream)) fromStream.push(e.data);
    expect(fromStream).toEqual(['x']);
    expect(cancelled()).toBe(false);

    let returned = false;
    async function* bytes() {
      try {
        yield encoder.encode('data: y\n\ndata: z\n\n');
        yield encoder.encode('data: never\n\n');
      } finally {
        returned = true;
      }
    }
    for await (const e of readEvents(bytes())) {
      expect(e.data).toBe('y');
      break;
    }
    expect(returned).toBe(true);

    const empty = [];
    for await (const e of readEvents(new Response(null))) empty.push(e);
    expect(empty).toEqual([]);
  });

  it('refuses what is not a byte source, and chunks that are not bytes', async () => {
    expect(() => readEvents('data: x' as never)).toThrow(TypeError);
    async function* strings() {
      yield 'data: x\n\n';
    }
    await expect(readEvents(strings() as never).next()).rejects.toThrow(/Uint8Array/);
  });
});
