/**
 * Attempt 1 on the lean path (src/undici/first.ts, `Executor.leanFirst`):
 * once a key is quiet, createAgent sends attempt 1 of a plain idempotent
 * request with neither the logical request nor its flight built, and builds
 * them only when the attempt does not simply succeed. Every test first
 * checks that the path was taken, then that what follows is what the full
 * path does: retries, deadlines, aborts, the policies' state, listeners.
 */
import { request } from 'undici';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DeadlineExceededError } from '../../src/errors.js';
import { Executor } from '../../src/executor.js';
import { constantBackoff } from '../../src/retry/backoff.js';
import { type MemoryStore, memoryStore, type StateStore } from '../../src/store/index.js';
import { createAgent } from '../../src/undici/index.js';
import { fakeClock, flush, until } from '../helpers/clock.js';
import { httpServer, statusServer, type TestServer } from '../helpers/server.js';
import { deferred } from '../helpers/stores.js';
import { closeAfterEach, rejection } from './support.js';

const open = closeAfterEach();
const fast = { attempts: 3, backoff: constantBackoff(0) };
/**
 * No policies: attempt 1 goes lean from the first request on, whatever the
 * time (on a quiet key it would take the full path again when the ledger's
 * period ends, which the system clock may reach between two requests; the
 * tests on a quiet key run on a fake clock).
 */
const OFF = { breaker: false, budget: false, rateLimit: false } as const;

afterEach(() => {
  vi.restoreAllMocks();
});

async function serve(handler: Parameters<typeof httpServer>[0]): Promise<TestServer> {
  return open.add(await httpServer(handler));
}

/** What `Executor.leanFirst` answered, call by call: a gate (lean) or `undefined` (full path). */
function leanAnswers(): () => boolean[] {
  const spy = vi.spyOn(Executor.prototype, 'leanFirst');
  return () => spy.mock.results.map((r) => r.type === 'return' && r.value !== undefined);
}

async function body(url: string, dispatcher: ReturnType<typeof createAgent>, path = '/') {
  const res = await request(new URL(path, url), { dispatcher });
  return { status: res.statusCode, text: await res.body.text() };
}

describe('attempt 1 on the lean path', () => {
  it('is taken from the second request of a quiet key on, and not for a POST', async () => {
    const server = open.add(await statusServer([200]));
    const answers = leanAnswers();
    const agent = open.add(createAgent({ clock: fakeClock(), retry: fast }));
    for (let i = 0; i < 3; i++) expect((await body(server.url, agent)).status).toBe(200);
    // The first arms the key's quiet period on the full path; the others go lean.
    expect(answers()).toEqual([false, true, true]);
    const post = await request(server.url, { dispatcher: agent, method: 'POST', body: 'x' });
    await post.body.text();
    expect(answers()).toHaveLength(3);
    expect(server.received).toHaveLength(4);
  });

  it('a 503 on it is retried as on the full path, the final response handed over whole', async () => {
    let calls = 0;
    const server = await serve((_req, res) => {
      calls++;
      res.statusCode = calls === 2 ? 503 : 200;
      res.end(`body ${calls}`);
    });
    const answers = leanAnswers();
    const agent = open.add(createAgent({ ...OFF, retry: fast }));
    expect(await body(server.url, agent)).toEqual({ status: 200, text: 'body 1' });
    expect(await body(server.url, agent)).toEqual({ status: 200, text: 'body 3' });
    expect(answers()).toEqual([true, true]);
    expect(server.received).toHaveLength(3);
  });

  it('a reset before its response is retried (a GET is replayable); with retries off it fails', async () => {
    let calls = 0;
    const server = await serve((req, res) => {
      calls++;
      if (calls === 2 || calls === 5) req.socket.destroy();
      else res.end('ok');
    });
    const answers = leanAnswers();
    const agent = open.add(createAgent({ ...OFF, retry: fast }));
    await body(server.url, agent);
    expect(await body(server.url, agent)).toEqual({ status: 200, text: 'ok' });
    expect(server.received).toHaveLength(3);
    const once = open.add(createAgent({ ...OFF, retry: false }));
    expect(await body(server.url, once)).toEqual({ status: 200, text: 'ok' });
    const error = await rejection(body(server.url, once));
    expect(error).toBeInstanceOf(Error);
    expect(answers()).toEqual([true, true, true, true]);
    expect(calls).toBe(5);
  });

  it('its deadline aborts the dispatch and attempt 2 goes, as on the full path', async () => {
    let calls = 0;
    const server = await serve((_req, res) => {
      calls++;
      if (calls !== 2) res.end('ok');
    });
    const clock = fakeClock();
    const answers = leanAnswers();
    const agent = open.add(createAgent({ clock, retry: fast, timeout: { attempt: 5_000 } }));
    await body(server.url, agent);
    const pending = body(server.url, agent);
    await server.seen(2);
    expect(clock.remaining()).toEqual([5_000]);
    await clock.advance(5_000);
    expect(await pending).toEqual({ status: 200, text: 'ok' });
    expect(answers()).toEqual([false, true]);
    expect(server.received).toHaveLength(3);
  });

  it('the total deadline, shorter than the attempt’s, is the one it runs under', async () => {
    let calls = 0;
    const server = await serve((_req, res) => {
      if (++calls === 1) res.end('ok');
    });
    const clock = fakeClock();
    const answers = leanAnswers();
    const agent = open.add(
      createAgent({ clock, retry: fast, timeout: { attempt: 10_000, total: 3_000 } }),
    );
    await body(server.url, agent);
    const pending = rejection(body(server.url, agent));
    await server.seen(2);
    expect(clock.remaining()).toEqual([3_000]);
    await clock.advance(3_000);
    const error = await pending;
    expect(error).toBeInstanceOf(DeadlineExceededError);
    expect((error as DeadlineExceededError).timeout).toBe('total');
    expect(answers()).toEqual([false, true]);
    // Nothing is left of the total: no attempt 2.
    await flush(5);
    expect(calls).toBe(2);
  });

  it("the caller's abort while it waits rejects with the reason and frees the socket", async () => {
    let closed = 0;
    let calls = 0;
    const server = await serve((req, res) => {
      req.socket.on('close', () => closed++);
      if (++calls === 1) res.end('ok');
    });
    const answers = leanAnswers();
    const agent = open.add(createAgent({ ...OFF, retry: fast }));
    await body(server.url, agent);
    const controller = new AbortController();
    const reason = new Error('caller gave up');
    const pending = request(server.url, { dispatcher: agent, signal: controller.signal });
    await server.seen(2);
    controller.abort(reason);
    expect(await rejection(pending)).toBe(reason);
    await until(() => closed === 1);
    expect(answers()).toEqual([true, true]);
    expect(calls).toBe(2);
  });

  it('a policy key of its own sees the method and the whole URL, as on the full path', async () => {
    const server = open.add(await statusServer([200]));
    const seen: string[] = [];
    const answers = leanAnswers();
    const agent = open.add(
      createAgent({
        clock: fakeClock(),
        key: (r) => {
          seen.push(`${r.method} ${r.url}`);
          return 'one';
        },
      }),
    );
    await body(server.url, agent, '/a?x=1');
    await body(server.url, agent, '/b');
    const origin = new URL(server.url).origin;
    expect(seen).toEqual([`GET ${origin}/a?x=1`, `GET ${origin}/b`]);
    expect(answers()).toEqual([false, true]);
  });

  it('with an attempt listener, every request takes the full path and is told', async () => {
    const server = open.add(await statusServer([200]));
    const answers = leanAnswers();
    const attempts: number[] = [];
    const agent = open.add(createAgent({ on: { attempt: (e) => attempts.push(e.status ?? 0) } }));
    for (let i = 0; i < 3; i++) await body(server.url, agent);
    expect(attempts).toEqual([200, 200, 200]);
    // Not even admitted on it: nothing asked of the ledger.
    expect(answers()).toEqual([]);
  });

  it('with the policies off: every request lean from the first, a 503 still retried', async () => {
    const server = open.add(await statusServer([200, 503, 200]));
    const answers = leanAnswers();
    const agent = open.add(
      createAgent({ retry: fast, breaker: false, budget: false, rateLimit: false }),
    );
    expect((await body(server.url, agent)).status).toBe(200);
    expect((await body(server.url, agent)).status).toBe(200);
    expect(answers()).toEqual([true, true]);
    expect(server.received).toHaveLength(3);
  });
});

describe('the policies after lean attempts', () => {
  /** Steps of [ms to advance, status]: quiet runs broken by 503s and 429s, across periods. */
  const STEPS: [number, number][] = [];
  {
    let seed = 11;
    const next = (): number => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return seed / 2_147_483_648;
    };
    const gaps = [0, 0, 1, 3, 20, 49, 50, 120, 499, 600];
    for (let i = 0; i < 200; i++) {
      const r = next();
      STEPS.push([gaps[Math.floor(next() * gaps.length)]!, r < 0.05 ? 503 : r < 0.1 ? 429 : 200]);
    }
  }

  it('leave the store as the full path on every request does, at every failure', async () => {
    const run = async (store: StateStore, inner: MemoryStore) => {
      const server = open.add(await statusServer(STEPS.map(([, status]) => status)));
      const clock = fakeClock();
      // No retries, no deadline: every pending timer is a policy's wait, let pass below.
      const agent = open.add(
        createAgent({ clock, store, key: () => 'upstream', retry: false, timeout: false }),
      );
      const seen: unknown[] = [];
      for (const [gap, status] of STEPS) {
        if (gap > 0) await clock.advance(gap);
        let done = false;
        const result = request(server.url, { dispatcher: agent }).then(
          async (res) => {
            await res.body.text();
            done = true;
          },
          () => {
            done = true;
          },
        );
        while (!done) {
          if (clock.remaining().length > 0) await clock.runNext();
          else await new Promise((resolve) => setImmediate(resolve));
        }
        await result;
        await flush(2);
        if (status !== 200) {
          const now = clock.now();
          seen.push([
            status,
            inner.peek('breaker:upstream', now) ?? null,
            inner.peek('budget:upstream', now) ?? null,
            inner.peek('rate:upstream', now) ?? null,
          ]);
        }
      }
      return seen;
    };
    const answers = leanAnswers();
    const quiet = memoryStore();
    const folded = await run(quiet, quiet);
    const leanCount = answers().filter(Boolean).length;
    const asked = memoryStore();
    const oneByOne = await run(deferred(asked), asked);
    expect(JSON.parse(JSON.stringify(folded), round)).toEqual(
      JSON.parse(JSON.stringify(oneByOne), round),
    );
    expect(folded.length).toBeGreaterThan(10);
    // Some of the first run's requests went lean; none of the second's (no quiet ledger there).
    expect(leanCount).toBeGreaterThan(10);
    expect(answers().slice(STEPS.length).some(Boolean)).toBe(false);
  });
});

/** Fractions to 9 significant digits: the limiter's decays are folded at a mean time. */
function round(_key: string, value: unknown): unknown {
  return typeof value === 'number' && !Number.isInteger(value)
    ? Number(value.toPrecision(9))
    : value;
}
