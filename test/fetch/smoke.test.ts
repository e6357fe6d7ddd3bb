import { afterEach, expect, test } from 'vitest';
import { createFetch } from '../../src/index.js';
import { fakeClock } from '../helpers/clock.js';
import { httpServer, type TestServer, trackedFetch } from '../helpers/server.js';

let server: TestServer;
afterEach(() => server?.close());

test('503 twice then 200: one call, three attempts at the server', async () => {
  server = await httpServer((_req, res, i) => {
    res.statusCode = i < 2 ? 503 : 200;
    res.end(i < 2 ? 'busy' : 'ok');
  });
  const clock = fakeClock();
  const t = trackedFetch();
  const stop = clock.autoAdvance(t.idle);
  const f = createFetch({ fetch: t.fetch, clock, random: () => 0.5 });
  const res = await f(`${server.url}/x`);
  stop();
  expect(res.status).toBe(200);
  expect(await res.text()).toBe('ok');
  expect(server.received).toHaveLength(3);
  expect(clock.sleeps.filter((ms) => ms < 60_000)).toEqual([125, 250]);
});
