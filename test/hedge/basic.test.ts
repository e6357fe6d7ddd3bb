import type { ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import type { AttemptEvent, AttemptStartEvent, RequestEndEvent } from '../../src/events.js';
import { createFetch } from '../../src/index.js';
import { fakeClock, until } from '../helpers/clock.js';
import { httpServer, type TestServer } from '../helpers/server.js';

let server: TestServer | undefined;
const stalled: ServerResponse[] = [];
afterEach(async () => {
  for (const res of stalled.splice(0)) res.destroy();
  await server?.close();
  server = undefined;
});

/** A server that stalls its first request and answers every other at once; counts closes. */
async function slowFirst() {
  const closed: number[] = [];
  server = await httpServer((_req, res, index) => {
    res.on('close', () => {
      if (!res.writableFinished) closed.push(index);
    });
    if (index === 0) stalled.push(res);
    else res.end(`answer ${index}`);
  });
  return { server, closed };
}

function recorder() {
  const starts: AttemptStartEvent[] = [];
  const attempts: AttemptEvent[] = [];
  const ends: RequestEndEvent[] = [];
  const on = {
    attemptStart: (e: AttemptStartEvent) => starts.push(e),
    attempt: (e: AttemptEvent) => attempts.push(e),
    end: (e: RequestEndEvent) => ends.push(e),
  };
  return { on, starts, attempts, ends };
}

describe('hedge (createFetch)', () => {
  it('sends a hedge after the delay; the fast answer wins, the first attempt is aborted', async () => {
    const { server, closed } = await slowFirst();
    const clock = fakeClock();
    const events = recorder();
    const fetch = createFetch({ clock, hedge: { delay: 50 }, on: events.on });
    const pending = fetch(server.url);
    await server.seen(1);
    expect(clock.sleeps).toContain(50);
    clock.advance(50);
    const res = await pending;
    expect(await res.text()).toBe('answer 1');
    expect(server.received).toHaveLength(2);
    await until(() => closed.length === 1);
    expect(closed).toEqual([0]);
    expect(events.starts.map((e) => [e.attempt, e.hedge])).toEqual([
      [1, undefined],
      [2, true],
    ]);
    expect(events.attempts.map((e) => [e.attempt, e.status, e.hedge, e.lost])).toEqual([
      [2, 200, true, undefined],
      [1, undefined, undefined, true],
    ]);
    expect(events.ends).toMatchObject([{ attempts: 2, status: 200, hedges: 1, won: 2 }]);
  });
});
