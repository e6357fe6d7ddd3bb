/**
 * Issue 10, items 5 and 7: backoff sleeps share the request's link to the
 * caller's signal (one listener per parent signal, however many requests
 * sleep under it), and a deadline error names the deadline that expired.
 */
import { getEventListeners } from 'node:events';
import { describe, expect, test } from 'vitest';
import { DeadlineExceededError } from '../../src/index.js';
import { until } from '../helpers/clock.js';
import { client } from '../helpers/harness.js';
import { httpServer, rawServer } from '../helpers/server.js';
import { closeAfterEach } from '../helpers/teardown.js';

const cleanup = closeAfterEach();

describe('sleeps under one signal', () => {
  test('24 requests in their backoff under one signal: one listener on it, no warning', async () => {
    const server = await httpServer((_req, res) => {
      res.statusCode = 503;
      res.end();
    });
    cleanup.add(server);
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on('warning', onWarning);
    cleanup.defer(() => process.off('warning', onWarning));
    const c = client({ retry: 3, breaker: false, budget: false }, { hold: () => true });
    cleanup.defer(c.stop);
    const controller = new AbortController();
    const all = Array.from({ length: 24 }, (_, i) =>
      c.fetch(`${server.url}/${i}`, { signal: controller.signal }),
    );
    await until(() => server.received.length === 24 && c.clock.remaining().length === 24);
    expect(getEventListeners(controller.signal, 'abort').length).toBeLessThanOrEqual(1);
    controller.abort(new Error('done'));
    const settled = await Promise.allSettled(all);
    expect(settled.every((r) => r.status === 'rejected')).toBe(true);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
  });
});

describe('DeadlineExceededError names the deadline that expired', () => {
  test('total: 700 with attempts of 300: the last attempt ends on the total, ms = 700', async () => {
    const server = await rawServer(() => {});
    cleanup.add(server);
    const c = client(
      { retry: { attempts: 5, backoff: () => 5 }, timeout: { total: 700, attempt: 300 } },
      { hold: () => true },
    );
    cleanup.defer(c.stop);
    const result = c.fetch(server.url).catch((e: unknown) => e);
    for (let i = 0; i < 20 && c.clock.remaining().length > 0; i++) {
      await c.clock.runNext();
      await new Promise((r) => setImmediate(r));
    }
    const error = (await result) as DeadlineExceededError;
    expect(error).toBeInstanceOf(DeadlineExceededError);
    expect(error.timeout).toBe('total');
    expect(error.ms).toBe(700);
    expect(error.message).toContain('timeout.total (700 ms)');
  });
});
