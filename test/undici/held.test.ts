/**
 * Attempt 1's deadline held by undici's headers timer (src/undici/first.ts,
 * `heldByUndici`): with createAgent's defaults (`timeouts.headers` equal to
 * `timeout.attempt`, 60 s each), a lean attempt 1 that undici writes at
 * once sets no deadline of staunch's; undici's own timer, which it runs for
 * every request from the moment it is written, ends it, and the caller sees
 * the same `DeadlineExceededError` as from staunch's. An attempt that waits
 * for a connection gets staunch's deadline for what is left of its time.
 *
 * Time is faked (`setTimeout` for undici's timers and staunch's deadline
 * list, `process.hrtime` for the list's clock); the sockets are real.
 */
import { lookup as dnsLookup } from 'node:dns';
import type { LookupFunction, Socket } from 'node:net';
import { request } from 'undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { DeadlineExceededError } from '../../src/errors.js';
import { systemClock } from '../../src/internal/clock.js';
import { steadyArmed } from '../../src/internal/deadlines.js';
import { resolveUndiciRuntime } from '../../src/undici/client.js';
import { HELD_MARGIN_MS, HELD_MIN_MS, heldByUndici } from '../../src/undici/first.js';
import { createAgent } from '../../src/undici/index.js';
import { resolveTransport } from '../../src/undici/options.js';
import { fakeClock, flush, until } from '../helpers/clock.js';
import { rawServer } from '../helpers/server.js';
import { closeAfterEach } from './support.js';

const open = closeAfterEach();
const realSetTimeout = globalThis.setTimeout;
/** No policies: every attempt 1 takes the lean path, whatever the (faked) time. */
const OFF = { breaker: false, budget: false, rateLimit: false } as const;

// One fake clock for the whole file: undici keeps the timer of its coarse clock for the life of
// the process, so a clock replaced between tests would leave it on the old one.
beforeAll(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'hrtime'] });
});

afterAll(() => {
  vi.useRealTimers();
});

beforeEach(() => {
  // A steady-list timer left by an earlier test goes at its next tick.
  vi.advanceTimersByTime(500);
});

/** A request that must fail: whether it has, and its error. */
function rejection(promise: Promise<unknown>) {
  let settled = false;
  const error = promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (e: unknown) => {
      settled = true;
      return e;
    },
  );
  return { settled: () => settled, error: () => error };
}

/** A raw server (by default one that reads requests and never answers), and the GETs it got. */
async function silent(onConnection: (socket: Socket) => void = () => {}) {
  const server = open.add(await rawServer(onConnection));
  const requests = () =>
    server.data.reduce((n, d) => n + (d.toString().match(/^GET /gm)?.length ?? 0), 0);
  return { server, requests };
}

describe("attempt 1's deadline, held by undici's headers timer", () => {
  it('a GET written at once sets no deadline of its own; undici ends it at 60 s as the deadline', async () => {
    const { server, requests } = await silent();
    const agent = open.add(createAgent({ ...OFF, retry: false }));
    expect(steadyArmed()).toBe(false);
    const pending = rejection(request(server.url, { dispatcher: agent }));
    await until(() => requests() === 1);
    await flush();
    // Written and waiting: no staunch deadline is pending.
    expect(steadyArmed()).toBe(false);
    vi.advanceTimersByTime(59_000);
    await flush();
    expect(pending.settled()).toBe(false);
    vi.advanceTimersByTime(2_000);
    const error = await pending.error();
    expect(error).toBeInstanceOf(DeadlineExceededError);
    expect((error as DeadlineExceededError).timeout).toBe('attempt');
    expect(requests()).toBe(1);
  });

  it('a GET queued behind a full pool gets staunch deadline, and both end with it', async () => {
    const { server, requests } = await silent();
    const agent = open.add(createAgent({ ...OFF, retry: false, connections: 1 }));
    const first = rejection(request(server.url, { dispatcher: agent }));
    await until(() => requests() === 1);
    const second = rejection(request(server.url, { dispatcher: agent }));
    // Queued behind the first, never written, untimed by undici: two immediates on, staunch's
    // deadline is set, and only it ends the request.
    await until(() => steadyArmed());
    vi.advanceTimersByTime(61_000);
    for (const p of [first, second]) {
      const error = await p.error();
      expect(error).toBeInstanceOf(DeadlineExceededError);
      expect((error as DeadlineExceededError).timeout).toBe('attempt');
    }
    expect(requests()).toBe(1);
  });

  it('a GET on the last free connection, written after undici checks it, is left to undici', async () => {
    // Answers the first request on each connection, then nothing.
    let answered = 0;
    const { server, requests } = await silent((socket) => {
      socket.once('data', () => {
        answered++;
        socket.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok');
      });
    });
    const agent = open.add(createAgent({ ...OFF, retry: false, connections: 1 }));
    const ok = await request(server.url, { dispatcher: agent });
    expect(await ok.body.text()).toBe('ok');
    expect(steadyArmed()).toBe(false);
    // undici says its pool is full (this request took its only connection) and writes it on
    // the idle connection an immediate later: staunch looks twice, finds it written.
    const pending = rejection(request(server.url, { dispatcher: agent }));
    await until(() => requests() === 2);
    await flush(10);
    expect(steadyArmed()).toBe(false);
    expect(server.connections).toBe(1);
    vi.advanceTimersByTime(61_000);
    expect(await pending.error()).toBeInstanceOf(DeadlineExceededError);
    expect(answered).toBe(1);
  });

  it('a GET written on a connection it waited for gets staunch deadline for the time left', async () => {
    const { server, requests } = await silent();
    // The lookup answers after 600 ms of real time (the deadline's clock is the system's).
    const lookup = ((host: string, options: object, callback: () => void) => {
      realSetTimeout(() => dnsLookup(host, options, callback), 600);
    }) as unknown as LookupFunction;
    const agent = open.add(createAgent({ ...OFF, retry: false, lookup }));
    const pending = rejection(
      request(server.url.replace('127.0.0.1', 'localhost'), { dispatcher: agent }),
    );
    await until(() => requests() === 1, 1_000_000);
    expect(steadyArmed()).toBe(true);
    vi.advanceTimersByTime(60_000);
    const error = await pending.error();
    expect(error).toBeInstanceOf(DeadlineExceededError);
    expect((error as DeadlineExceededError).timeout).toBe('attempt');
  });

  it('with a headers timeout of its own, attempt 1 keeps staunch deadline', async () => {
    const { server, requests } = await silent();
    const agent = open.add(createAgent({ ...OFF, retry: false, timeouts: { headers: 120_000 } }));
    const pending = rejection(request(server.url, { dispatcher: agent }));
    await until(() => requests() === 1);
    expect(steadyArmed()).toBe(true);
    vi.advanceTimersByTime(60_000);
    const error = await pending.error();
    expect(error).toBeInstanceOf(DeadlineExceededError);
    expect((error as DeadlineExceededError).timeout).toBe('attempt');
  });
});

describe('heldByUndici: when undici may hold the deadline', () => {
  const runtime = (o: object) => resolveUndiciRuntime(o, 'createAgent options');
  const transport = (o: Record<string, unknown> = {}) => resolveTransport(o);

  it('holds with the defaults, on the system clock, over HTTP/1.1', () => {
    expect(runtime({}).executor.clock).toBe(systemClock);
    expect(heldByUndici(runtime({}), transport())).toBe(true);
  });

  it('does not on another clock, over HTTP/2, or with other timeouts', () => {
    expect(heldByUndici(runtime({ clock: fakeClock() }), transport())).toBe(false);
    expect(heldByUndici(runtime({}), transport({ allowH2: true }))).toBe(false);
    expect(heldByUndici(runtime({}), transport({ timeouts: { headers: 30_000 } }))).toBe(false);
    expect(heldByUndici(runtime({ timeout: { attempt: 30_000 } }), transport())).toBe(false);
    const short = HELD_MIN_MS - 1;
    expect(
      heldByUndici(
        runtime({ timeout: { attempt: short } }),
        transport({ timeouts: { headers: short } }),
      ),
    ).toBe(false);
    expect(
      heldByUndici(runtime({ timeout: { total: 60_000 + HELD_MARGIN_MS - 1 } }), transport()),
    ).toBe(false);
    expect(
      heldByUndici(runtime({ timeout: { total: 60_000 + HELD_MARGIN_MS } }), transport()),
    ).toBe(true);
    expect(heldByUndici(runtime({ timeout: false }), transport())).toBe(false);
    // A connection that may take longer to open than the attempt has.
    expect(heldByUndici(runtime({}), transport({ timeouts: { connect: 0 } }))).toBe(false);
    expect(heldByUndici(runtime({}), transport({ timeouts: { connect: 60_001 } }))).toBe(false);
  });
});
