/**
 * Hedged requests through staunch/undici: `createAgent` and
 * `retryInterceptor` (whose attempt 1 is otherwise sent by the adapter
 * itself, first.ts; a hedged request runs every attempt in the loop). A real
 * server holds the first request and answers the others; the test clock is
 * moved by hand while the first attempt is in flight.
 */
import type { ServerResponse } from 'node:http';
import { Agent, type Dispatcher, request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import type { AttemptStartEvent, RequestEndEvent } from '../../src/events.js';
import { CHANNELS, createAgent, retryInterceptor } from '../../src/undici/index.js';
import { type FakeClock, fakeClock, flush, until } from '../helpers/clock.js';
import { httpServer, type TestServer } from '../helpers/server.js';
import { channelLog, closeAfterEach } from './support.js';

const open = closeAfterEach();
const held: ServerResponse[] = [];
afterEach(() => {
  for (const res of held.splice(0)) res.destroy();
});

/** Holds request 0 (counting whether its connection closed unanswered), answers the rest. */
async function slowFirst() {
  const closed: number[] = [];
  const server: TestServer = open.add(
    await httpServer((_req, res, index) => {
      res.on('close', () => {
        if (!res.writableFinished) closed.push(index);
      });
      if (index === 0) held.push(res);
      else res.end(`answer ${index}`);
    }),
  );
  return { server, closed };
}

function listeners() {
  const starts: AttemptStartEvent[] = [];
  const ends: RequestEndEvent[] = [];
  const on = {
    attemptStart: (e: AttemptStartEvent) => starts.push(e),
    end: (e: RequestEndEvent) => ends.push(e),
  };
  return { on, starts, ends };
}

async function hedgedOnce(dispatcher: Dispatcher, clock: FakeClock) {
  const { server, closed } = await slowFirst();
  const pending = request(server.url, { dispatcher });
  await server.seen(1);
  expect(clock.sleeps).toContain(50);
  await clock.advance(50);
  const res = await pending;
  expect(res.statusCode).toBe(200);
  expect(await res.body.text()).toBe('answer 1');
  expect(server.received).toHaveLength(2);
  await until(() => closed.length === 1);
  expect(closed).toEqual([0]);
}

describe('hedge (staunch/undici)', () => {
  it('createAgent: the hedge wins, attempt 1 is aborted, the events and channel say so', async () => {
    const clock = fakeClock();
    const l = listeners();
    const log = channelLog([CHANNELS.attemptStart]);
    try {
      const agent = open.add(createAgent({ clock, hedge: { delay: 50 }, on: l.on }));
      await hedgedOnce(agent, clock);
    } finally {
      log.stop();
    }
    expect(l.starts.map((e) => [e.attempt, e.hedge])).toEqual([
      [1, undefined],
      [2, true],
    ]);
    expect(log.messages.map((m) => (m.message as AttemptStartEvent).hedge)).toEqual([
      undefined,
      true,
    ]);
    expect(l.ends).toMatchObject([{ attempts: 2, status: 200, hedges: 1, won: 2 }]);
  });

  it('retryInterceptor: the same hedge', async () => {
    const clock = fakeClock();
    const l = listeners();
    const dispatcher = new Agent().compose(
      retryInterceptor({ clock, hedge: { delay: 50 }, on: l.on }),
    );
    open.add(dispatcher);
    await hedgedOnce(dispatcher, clock);
    expect(l.ends).toMatchObject([{ hedges: 1, won: 2 }]);
  });

  it("the dispatch's staunch.hedge: false sends attempt 1 alone", async () => {
    const clock = fakeClock();
    const { server } = await slowFirst();
    const agent = open.add(createAgent({ clock, hedge: { delay: 50 } }));
    const pending = request(server.url, {
      dispatcher: agent,
      staunch: { hedge: false },
    } as Parameters<typeof request>[1]);
    await server.seen(1);
    expect(clock.sleeps).not.toContain(50);
    await clock.advance(50);
    await flush(20);
    expect(server.received).toHaveLength(1);
    held[0]!.end('late');
    expect(await (await pending).body.text()).toBe('late');
  });
});
