/**
 * staunch/deadline's `deadlineSignal`: the caller's time left as an
 * AbortSignal, on a test clock; a real node:http server for the disconnect
 * and for the header as staunch's own client sends it.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { describe, expect, test } from 'vitest';
import { deadlineSignal, type RequestDeadline } from '../../src/deadline/index.js';
import { createFetch } from '../../src/index.js';
import { fakeClock, flush, until } from '../helpers/clock.js';
import { closeAfterEach } from '../helpers/teardown.js';

const cleanup = closeAfterEach();

describe('the deadline from the header', () => {
  test('a Fetch Request in grpc-timeout form: fires exactly when the time left has passed', async () => {
    const clock = fakeClock(1_000);
    const request = new Request('http://x/', { headers: { 'grpc-timeout': '3S' } });
    const d = deadlineSignal(request, { clock });
    expect(d.deadline).toBe(4_000);
    expect(d.timeLeft()).toBe(3_000);
    expect(clock.remaining()).toEqual([3_000]);
    await clock.advance(2_999);
    expect(d.signal.aborted).toBe(false);
    expect(d.timeLeft()).toBe(1);
    await clock.advance(1);
    expect(d.signal.aborted).toBe(true);
    expect(d.signal.reason).toMatchObject({ name: 'TimeoutError' });
    expect(String(d.signal.reason.message)).toMatch(/caller's deadline/);
    expect(d.timeLeft()).toBe(0);
  });

  test('Headers, a plain record (any case, an array value), ms or auto', () => {
    const clock = fakeClock(0);
    const asHeaders = deadlineSignal(new Headers({ 'X-Timeout-Ms': '950' }), {
      clock,
      header: 'x-timeout-ms',
      format: 'ms',
    });
    expect(asHeaders.deadline).toBe(950);
    const record = deadlineSignal(
      { 'X-Timeout-Ms': ['120', '999'] },
      { clock, header: 'X-Timeout-Ms' },
    );
    expect(record.deadline).toBe(120);
    const fastify = deadlineSignal({ headers: { 'grpc-timeout': '2M' } }, { clock });
    expect(fastify.deadline).toBe(120_000);
    for (const d of [asHeaders, record, fastify]) d.dispose();
    expect(clock.remaining()).toEqual([]);
  });

  test('capped by max, whose reason says so; a header below max wins', async () => {
    const clock = fakeClock(0);
    const capped = deadlineSignal({ 'grpc-timeout': '10S' }, { clock, max: 2_000 });
    expect(capped.deadline).toBe(2_000);
    const shorter = deadlineSignal({ 'grpc-timeout': '500m' }, { clock, max: 2_000 });
    expect(shorter.deadline).toBe(500);
    await clock.advance(2_000);
    expect(capped.signal.reason.message).toMatch(/server's max/);
    expect(shorter.signal.reason.message).toMatch(/caller's deadline/);
  });

  test('missing or malformed: no deadline beyond max, never a throw', async () => {
    const clock = fakeClock(0);
    for (const value of ['', 'soon', '-5', '1.5S', '123456789m', '10s']) {
      const d = deadlineSignal({ 'grpc-timeout': value }, { clock });
      expect(d.deadline, value).toBeUndefined();
      expect(d.timeLeft()).toBe(Number.POSITIVE_INFINITY);
      const m = deadlineSignal({ 'grpc-timeout': value }, { clock, max: 100 });
      expect(m.deadline, value).toBe(100);
    }
    expect(deadlineSignal({}, { clock }).deadline).toBeUndefined();
    expect(
      deadlineSignal({ 'x-timeout-ms': '5S' }, { clock, header: 'x-timeout-ms', format: 'ms' })
        .deadline,
    ).toBeUndefined();
    await clock.advance(100);
    expect(clock.remaining()).toEqual([]);
  });

  test('0 left: aborted at once, no timer', () => {
    const clock = fakeClock(0);
    const d = deadlineSignal({ 'grpc-timeout': '0m' }, { clock });
    expect(d.signal.aborted).toBe(true);
    expect(clock.remaining()).toEqual([]);
  });

  test('the given signal and a Request’s own signal abort it, with their reasons', () => {
    const clock = fakeClock(0);
    const outer = new AbortController();
    const d = deadlineSignal({}, { clock, signal: outer.signal, max: 1_000 });
    outer.abort('shutdown');
    expect(d.signal.reason).toBe('shutdown');
    expect(clock.remaining()).toEqual([]);
    const client = new AbortController();
    const fromRequest = deadlineSignal(new Request('http://x/', { signal: client.signal }), {
      clock,
    });
    client.abort('gone');
    expect(fromRequest.signal.reason).toBe('gone');
  });

  test('bad options: a TypeError or RangeError naming the option and the value', () => {
    expect(() => deadlineSignal({}, { header: 'a b' })).toThrow(
      new TypeError('header must be a header name, got "a b"'),
    );
    expect(() => deadlineSignal({}, { format: 'S' as 'ms' })).toThrow(
      new TypeError("format must be 'auto', 'ms' or 'grpc-timeout', got \"S\""),
    );
    expect(() => deadlineSignal({}, { max: -1 })).toThrow(RangeError);
    expect(() => deadlineSignal({}, { max: -1 })).toThrow(/max .*-1/);
    expect(() => deadlineSignal({}, { maxx: 1 } as never)).toThrow(TypeError);
  });
});

/** A node:http server whose handler builds a deadline per request and keeps it. */
async function nodeServer(
  handle: (req: IncomingMessage, res: ServerResponse, d: RequestDeadline) => void,
  options: Parameters<typeof deadlineSignal>[1],
) {
  const deadlines: RequestDeadline[] = [];
  const server = createServer((req, res) => {
    const d = deadlineSignal(res, options);
    deadlines.push(d);
    handle(req, res, d);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanup.add({ close: () => new Promise<void>((resolve) => server.close(() => resolve())) });
  return { port: (server.address() as AddressInfo).port, deadlines };
}

describe('on a node:http server', () => {
  test('a client that disconnects aborts the signal; a finished response only clears it', async () => {
    const clock = fakeClock(0);
    const { port, deadlines } = await nodeServer(
      (req, res) => {
        if (req.url === '/fast') res.end('ok');
        // '/slow' never answers: the client goes first.
      },
      { clock, header: 'x-timeout-ms', max: 60_000 },
    );
    const fast = await fetch(`http://127.0.0.1:${port}/fast`, {
      headers: { 'x-timeout-ms': '5000' },
    });
    await fast.text();
    await until(() => deadlines.length === 1 && clock.remaining().length === 0);
    expect(deadlines[0]!.signal.aborted).toBe(false);
    expect(deadlines[0]!.deadline).toBe(5_000);

    const socket = connect(port, '127.0.0.1');
    socket.write('GET /slow HTTP/1.1\r\nhost: x\r\nx-timeout-ms: 9000\r\n\r\n');
    await until(() => deadlines.length === 2);
    expect(clock.remaining()).toEqual([9_000]);
    socket.destroy();
    await until(() => deadlines[1]!.signal.aborted);
    expect(deadlines[1]!.signal.reason).toMatchObject({ name: 'AbortError' });
    await flush();
    expect(clock.remaining()).toEqual([]);
  });

  test('the header staunch’s client sends gives the server the same deadline on a shared clock', async () => {
    const clock = fakeClock(10_000);
    const { port, deadlines } = await nodeServer((_req, res) => res.end('ok'), {
      clock,
      header: 'grpc-timeout',
    });
    const staunch = createFetch({
      clock,
      timeout: { total: 2_500 },
      deadlineHeader: { name: 'grpc-timeout', format: 'grpc-timeout', margin: 100 },
    });
    const res = await staunch(`http://127.0.0.1:${port}/`);
    await res.text();
    expect(deadlines[0]!.deadline).toBe(12_400);
  });
});
