/**
 * resumableEvents against real servers that drop the stream mid-event: the
 * reconnection carries Last-Event-ID, waits the server's retry: (scheduled on
 * a fake clock, asserted), is bounded, and a POST is refused.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { EventStreamError } from '../../src/sse/errors.js';
import { type ReconnectInfo, resumableEvents } from '../../src/sse/resume.js';
import { fakeClock, until } from '../helpers/clock.js';
import {
  closedPort,
  httpServer,
  type RawServer,
  rawServer,
  type TestServer,
} from '../helpers/server.js';

const servers: (TestServer | RawServer)[] = [];
const stops: (() => void)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) stop();
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

function autoClock() {
  const clock = fakeClock();
  stops.push(clock.autoAdvance());
  return clock;
}

const HEAD = 'HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n';
// Chunked, so that a reset is an error and not the end of a close-delimited body.
const CHUNKED =
  'HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n';
const chunk = (text: string) => `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`;
const LAST = '0\r\n\r\n';

describe('resumableEvents', () => {
  it('a reset mid-event reconnects after retry: with Last-Event-ID; the ID carries over', async () => {
    const server = await httpServer((_req, res, i) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      if (i === 0) {
        res.write('retry: 1500\nid: 1\ndata: a\n\nid: 2\ndata: b\n\ndata: cut sh', () =>
          res.socket?.destroy(),
        );
      } else {
        res.end('data: c\n\n');
      }
    });
    servers.push(server);
    const clock = autoClock();
    const reconnects: ReconnectInfo[] = [];
    const reader = resumableEvents(
      fetch,
      server.url,
      {},
      {
        clock,
        onReconnect: (info) => reconnects.push(info),
      },
    );
    const events = [];
    for await (const e of reader) events.push([e.data, e.id]);
    expect(events).toEqual([
      ['a', '1'],
      ['b', '2'],
      ['c', '2'],
    ]);
    expect(server.received.map((r) => r.headers['last-event-id'])).toEqual([undefined, '2']);
    expect(server.received[0]!.headers.accept).toBe('text/event-stream');
    expect(clock.sleeps).toEqual([1500]);
    expect(reconnects.map((r) => [r.attempt, r.delay, r.lastEventId])).toEqual([[1, 1500, '2']]);
    expect(reconnects[0]!.error).toBeInstanceOf(EventStreamError);
    expect(reader.connections).toBe(2);
  });

  it('a raw connection closed inside an event is a drop; 204 on the reconnection ends it', async () => {
    const server = await rawServer((socket, i) => {
      socket.once('data', () => {
        if (i === 0) socket.end(`${HEAD}id: x\ndata: 1\n\ndata: trunc`);
        else socket.end('HTTP/1.1 204 No Content\r\nconnection: close\r\n\r\n');
      });
    });
    servers.push(server);
    const clock = autoClock();
    const events = [];
    for await (const e of resumableEvents(fetch, server.url, {}, { clock, retry: 10 })) {
      events.push(e.data);
    }
    expect(events).toEqual(['1']);
    expect(server.connections).toBe(2);
    expect(server.data[1]!.toString()).toMatch(/\r\nlast-event-id: x\r\n/i);
    expect(clock.sleeps).toEqual([10]);
  });

  it('a clean end at an event boundary is the end: no reconnection', async () => {
    const server = await rawServer((socket) => {
      socket.once('data', () => socket.end(`${HEAD}data: 1\n\n`));
    });
    servers.push(server);
    const clock = autoClock();
    const events = [];
    for await (const e of resumableEvents(fetch, server.url, {}, { clock })) events.push(e.data);
    expect(events).toEqual(['1']);
    expect(server.connections).toBe(1);
    expect(clock.sleeps).toEqual([]);
  });

  it('gives up after `reconnects` reconnections in a row without an event, waits doubling', async () => {
    const server = await rawServer((socket) => {
      socket.once('data', () =>
        socket.write(CHUNKED + chunk(': hi\n'), () => socket.resetAndDestroy()),
      );
    });
    servers.push(server);
    const clock = autoClock();
    const reader = resumableEvents(
      fetch,
      server.url,
      {},
      { clock, reconnects: 3, retry: 1000, maxDelay: 3000 },
    );
    const error = await reader.next().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EventStreamError);
    expect((error as EventStreamError).events).toBe(0);
    expect((error as EventStreamError).message).toMatch(/3 reconnections/);
    expect(server.connections).toBe(4);
    expect(clock.sleeps).toEqual([1000, 2000, 3000]);
  });

  it('an event resets the count: drops with progress in between keep reconnecting', async () => {
    const server = await rawServer((socket, i) => {
      socket.once('data', () => {
        if (i < 4) {
          socket.write(CHUNKED + chunk(`id: ${i}\ndata: ${i}\n\n`), () => socket.resetAndDestroy());
        } else socket.end(CHUNKED + chunk('data: last\n\n') + LAST);
      });
    });
    servers.push(server);
    const clock = autoClock();
    const events = [];
    const reader = resumableEvents(fetch, server.url, {}, { clock, reconnects: 1, retry: 5 });
    for await (const e of reader) events.push(e.data);
    expect(events).toEqual(['0', '1', '2', '3', 'last']);
    expect(clock.sleeps).toEqual([5, 5, 5, 5]);
  });

  it("the caller's signal aborts a reconnection wait with its own reason", async () => {
    const server = await rawServer((socket) => {
      socket.once('data', () =>
        socket.write(CHUNKED + chunk('data: 1\n\n'), () => socket.resetAndDestroy()),
      );
    });
    servers.push(server);
    const clock = fakeClock();
    const controller = new AbortController();
    const reader = resumableEvents(fetch, server.url, { signal: controller.signal }, { clock });
    expect((await reader.next()).value?.data).toBe('1');
    const next = reader.next();
    await until(() => clock.remaining().length > 0);
    const reason = new Error('deadline');
    controller.abort(reason);
    await expect(next).rejects.toBe(reason);
    expect(server.connections).toBe(1);
    expect(await reader.next()).toEqual({ done: true, value: undefined });
  });

  it('return() during a reconnection wait ends the pending next() as done', async () => {
    const server = await rawServer((socket) => {
      socket.once('data', () =>
        socket.write(CHUNKED + chunk('data: 1\n\n'), () => socket.resetAndDestroy()),
      );
    });
    servers.push(server);
    const clock = fakeClock();
    const reader = resumableEvents(fetch, server.url, {}, { clock });
    expect((await reader.next()).value?.data).toBe('1');
    const next = reader.next();
    await until(() => clock.remaining().length > 0);
    await reader.return();
    expect(await next).toEqual({ done: true, value: undefined });
    expect(clock.remaining()).toEqual([]);
    expect(server.connections).toBe(1);
  });

  it('a status other than 200 or a wrong content type fails for good', async () => {
    const server = await httpServer((_req, res, i) => {
      if (i === 0) res.writeHead(500).end('oops');
      else res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
    servers.push(server);
    const clock = autoClock();
    const first = await resumableEvents(fetch, server.url, {}, { clock })
      .next()
      .catch((e: unknown) => e);
    expect(first).toMatchObject({ reason: 'status', status: 500 });
    const second = await resumableEvents(fetch, server.url, {}, { clock })
      .next()
      .catch((e: unknown) => e);
    expect(second).toMatchObject({ reason: 'content-type' });
    expect(server.received).toHaveLength(2);
    expect(clock.sleeps).toEqual([]);
  });

  it('return() during a read closes the connection', async () => {
    let closed!: () => void;
    const socketClosed = new Promise<void>((resolve) => {
      closed = resolve;
    });
    const server = await httpServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: 1\n\n');
      req.socket.on('close', closed);
    });
    servers.push(server);
    const reader = resumableEvents(fetch, server.url);
    expect((await reader.next()).value?.data).toBe('1');
    const pending = reader.next();
    await reader.return();
    expect(await pending).toEqual({ done: true, value: undefined });
    await socketClosed;
  });

  it('a refused connection is reconnected, bounded; an invalid URL is not', async () => {
    const clock = autoClock();
    const port = await closedPort();
    const reader = resumableEvents(
      fetch,
      `http://127.0.0.1:${port}/`,
      {},
      { clock, reconnects: 2 },
    );
    const error = await reader.next().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EventStreamError);
    expect((error as EventStreamError).cause).toBeInstanceOf(TypeError);
    expect(reader.connections).toBe(3);
    expect(clock.sleeps).toEqual([3000, 6000]);

    const invalid = resumableEvents(fetch, 'http://127.0.0.1:99999/', {}, { clock });
    await expect(invalid.next()).rejects.toThrow(TypeError);
    expect(invalid.connections).toBe(1);
    expect(clock.sleeps).toEqual([3000, 6000]);
  });

  it('refuses a POST stream, a body and bad options, naming them', () => {
    expect(() => resumableEvents(fetch, 'http://127.0.0.1:1/', { method: 'POST' })).toThrow(
      /init\.method must be GET.*not replayable/,
    );
    expect(() => resumableEvents(fetch, 'http://127.0.0.1:1/', { body: 'x' })).toThrow(TypeError);
    expect(() => resumableEvents(fetch, 'http://127.0.0.1:1/', {}, { reconnects: -1 })).toThrow(
      /options\.reconnects/,
    );
    expect(() => resumableEvents(fetch, 'http://127.0.0.1:1/', {}, { retry: Number.NaN })).toThrow(
      /options\.retry/,
    );
    expect(() => resumableEvents(fetch, 'http://127.0.0.1:1/', {}, { nope: 1 } as never)).toThrow(
      /nope/,
    );
  });
});
