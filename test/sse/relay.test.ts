/**
 * The relay: formatting (round trip through the parser), toEventStream, and
 * pipeEvents between a real upstream and a real downstream client: when the
 * client disconnects, the upstream server sees its socket close.
 */
import { request } from 'node:http';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { EventWriter, formatEvent } from '../../src/sse/format.js';
import { disconnectSignal, type PipeEventsResult, pipeEvents } from '../../src/sse/node.js';
import { readEvents } from '../../src/sse/read.js';
import { toEventStream } from '../../src/sse/relay.js';
import { httpServer, type TestServer } from '../helpers/server.js';
import { encoder, parseChunks } from './support.js';

const servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

describe('formatting', () => {
  it('splits multi-line data, writes id and retry only when they change', () => {
    const w = new EventWriter();
    expect(w.format('a\r\nb\rc\nd')).toBe('data: a\ndata: b\ndata: c\ndata: d\n\n');
    expect(w.format({ event: 'delta', data: ' x', id: '1' })).toBe(
      'event: delta\nid: 1\ndata:  x\n\n',
    );
    expect(w.format({ data: 'y', id: '1', retry: 500 })).toBe('retry: 500\ndata: y\n\n');
    expect(w.format({ event: 'message', data: '', id: '', retry: 500 })).toBe('id\ndata: \n\n');
    expect(w.format({ comment: 'keep-alive' })).toBe(':keep-alive\n\n');
    expect(w.format({})).toBe('');
    expect(formatEvent({ data: 'z', id: '' })).toBe('id\ndata: z\n\n');
  });

  it('refuses fields that would break the stream, naming them', () => {
    const w = new EventWriter();
    expect(() => w.format({ event: 'a\nb', data: 'x' })).toThrow(/event\.event/);
    expect(() => w.format({ id: 'a\rb' })).toThrow(/event\.id/);
    expect(() => w.format({ id: 'a\0b' })).toThrow(/event\.id/);
    expect(() => w.format({ retry: -1 })).toThrow(/event\.retry/);
    expect(() => w.format({ data: 5 as never })).toThrow(/event\.data/);
    expect(() => w.format(null as never)).toThrow(TypeError);
  });

  it('round trip: what the writer writes, the parser reads back', () => {
    const text = fc.string({ unit: fc.constantFrom('a', ' ', ':', '\n', '\r', 'é', '😀') });
    const name = fc.string({ unit: fc.constantFrom('a', ' ', ':', 'é'), minLength: 1 });
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            event: fc.option(name, { nil: undefined }),
            data: text,
            id: fc.option(name, { nil: undefined }),
            retry: fc.option(fc.nat(), { nil: undefined }),
          }),
          { maxLength: 5 },
        ),
        (messages) => {
          const w = new EventWriter();
          const events = parseChunks([encoder.encode(messages.map((m) => w.format(m)).join(''))]);
          let id = '';
          expect(events).toEqual(
            messages.map((m) => {
              if (m.id !== undefined) id = m.id;
              return expect.objectContaining({
                event: m.event ?? 'message',
                data: m.data.replace(/\r\n|\r/g, '\n'),
                id,
              });
            }),
          );
        },
      ),
    );
  });
});

async function text(stream: ReadableStream<Uint8Array>): Promise<string> {
  return new Response(stream).text();
}

describe('toEventStream', () => {
  it('writes the events of a sync or async iterable', async () => {
    expect(await text(toEventStream(['a', { event: 'e', data: 'b' }]))).toBe(
      'data: a\n\nevent: e\ndata: b\n\n',
    );
    async function* gen() {
      yield 'x';
    }
    expect(await text(toEventStream(gen()))).toBe('data: x\n\n');
  });

  it('cancelling the stream returns the source at once, even while it waits', async () => {
    let returned = 0;
    const source: AsyncIterator<string> & AsyncIterable<string> = {
      [Symbol.asyncIterator]: () => source,
      next: () => new Promise(() => {}), // a silent upstream
      return: async () => {
        returned++;
        return { done: true, value: undefined };
      },
    };
    const reader = toEventStream(source).getReader();
    const pending = reader.read();
    await reader.cancel();
    expect(await pending).toEqual({ done: true, value: undefined });
    expect(returned).toBe(1);
  });

  it('signal closes the stream cleanly; onError writes a last event', async () => {
    const controller = new AbortController();
    controller.abort();
    expect(await text(toEventStream(['never'], { signal: controller.signal }))).toBe('');
    async function* failing() {
      yield 'a';
      throw new Error('upstream dropped');
    }
    const stream = toEventStream(failing(), {
      onError: (e) => ({ event: 'error', data: (e as Error).message }),
    });
    expect(await text(stream)).toBe('data: a\n\nevent: error\ndata: upstream dropped\n\n');
    await expect(text(toEventStream(failing()))).rejects.toThrow('upstream dropped');
  });
});

/** An upstream that sends one event and then stays silent; resolves `closed` when its socket closes. */
async function silentUpstream() {
  let closed!: () => void;
  const socketClosed = new Promise<void>((resolve) => {
    closed = resolve;
  });
  const server = await httpServer((req, res) => {
    req.socket.on('close', closed);
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('id: 1\ndata: token\n\n');
  });
  servers.push(server);
  return { server, socketClosed };
}

/** A downstream client that reads the first bytes, then disconnects. */
function readThenLeave(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(url, (res) => {
      res.once('data', (chunk: Buffer) => {
        req.destroy();
        resolve(chunk.toString());
      });
    });
    req.on('error', () => {});
    req.on('close', () => reject(new Error('closed before any data')));
    req.end();
  });
}

describe('pipeEvents', () => {
  for (const withSignal of [true, false]) {
    it(`the client leaving aborts the upstream request (${withSignal ? 'disconnectSignal' : 'the iterator alone'})`, async () => {
      const upstream = await silentUpstream();
      let result!: Promise<PipeEventsResult>;
      const relay = await httpServer((_req, res) => {
        result = (async () => {
          const signal = withSignal ? disconnectSignal(res) : undefined;
          const up = await fetch(upstream.server.url, { signal: signal ?? null });
          return pipeEvents(readEvents(up, { signal }), res);
        })();
      });
      servers.push(relay);
      expect(await readThenLeave(relay.url)).toBe('id: 1\ndata: token\n\n');
      await upstream.socketClosed;
      expect(await result).toEqual({ reason: 'disconnect', events: 1 });
      expect(upstream.server.received).toHaveLength(1);
    });
  }

  it('relays to the end, with the event-stream headers; an upstream drop ends the response', async () => {
    const upstream = await httpServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: a\n\ndata: b\nda', () => res.socket?.destroy());
    });
    servers.push(upstream);
    let result!: Promise<PipeEventsResult>;
    const relay = await httpServer((_req, res) => {
      result = fetch(upstream.url).then((up) =>
        pipeEvents(readEvents(up), res, {
          onError: (e) => ({ event: 'error', data: (e as Error).name }),
        }),
      );
    });
    servers.push(relay);
    const res = await fetch(relay.url);
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('no-cache, no-transform');
    expect(await res.text()).toBe('data: a\n\nevent: error\ndata: EventStreamError\n\n');
    expect(await result).toMatchObject({ reason: 'error', events: 1 });
  });
});
