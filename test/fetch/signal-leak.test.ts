/**
 * One long-lived parent signal over 100k requests: no abort listener is left
 * on it and the heap stays flat. (AbortSignal.any leaks in this pattern on
 * Node 20; staunch links signals by hand.) Runs with --expose-gc.
 */
import { getEventListeners } from 'node:events';
import { expect, test } from 'vitest';
import { createFetch } from '../../src/index.js';

const gc = (globalThis as { gc?: () => void }).gc;
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

async function collect(): Promise<void> {
  for (let i = 0; i < 6; i++) {
    gc!();
    await turn();
  }
}

test('100k requests under one parent signal leave no listener and a flat heap', async () => {
  expect(gc, 'run with node --expose-gc').toBeTypeOf('function');
  const parent = new AbortController();
  // In-memory transport: this test is about signals, not sockets.
  const fetch = createFetch({
    fetch: async (_url, init) => {
      if (init.signal?.aborted) throw init.signal.reason;
      return new Response('ok');
    },
  });
  const batch = async (n: number, consume: boolean) => {
    for (let i = 0; i < n; i += 100) {
      await Promise.all(
        Array.from({ length: 100 }, async () => {
          const res = await fetch('http://127.0.0.1/x', { signal: parent.signal });
          if (consume) await res.text();
        }),
      );
    }
  };

  await batch(10_000, true);
  await collect();
  const before = process.memoryUsage().heapUsed;

  await batch(90_000, true);
  await batch(10_000, false); // bodies never read
  await collect();
  const after = process.memoryUsage().heapUsed;

  expect(getEventListeners(parent.signal, 'abort').length).toBeLessThan(50);
  expect(after - before).toBeLessThan(8 * 1024 * 1024);
  // The parent still works for a new request.
  const live = fetch('http://127.0.0.1/y', { signal: parent.signal });
  await expect(live).resolves.toBeInstanceOf(Response);
}, 120_000);

test('while a response body is alive, the caller’s signal still aborts it', async () => {
  const parent = new AbortController();
  let transportSignal: AbortSignal | undefined;
  const fetch = createFetch({
    fetch: async (_url, init) => {
      transportSignal = init.signal ?? undefined;
      return new Response(new ReadableStream({ pull() {} }));
    },
  });
  const res = await fetch('http://127.0.0.1/stream', { signal: parent.signal });
  expect(getEventListeners(parent.signal, 'abort')).toHaveLength(1);
  parent.abort(new Error('caller stop'));
  expect(transportSignal?.aborted).toBe(true);
  expect(transportSignal?.reason).toEqual(new Error('caller stop'));
  expect(res.bodyUsed).toBe(false);
});
