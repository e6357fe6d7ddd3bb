/**
 * The policies' quiet ledger (src/policy/ledger.ts): while a key is quiet,
 * attempt 1 and its success are counted without a policy call, and the
 * counts are handed over before any other policy call. These compare it,
 * through a real client and a real server, with the same client whose
 * store answers a turn later (then there is no ledger: every attempt asks
 * the policies), and check that a write by another client voids it.
 */
import { afterEach, describe, expect, test, vi } from 'vitest';
import { CircuitOpenError, createFetch } from '../../src/index.js';
import { noop } from '../../src/internal/clock.js';
import { CircuitBreaker } from '../../src/policy/breaker.js';
import { RetryBudget } from '../../src/policy/budget.js';
import { Ledgers } from '../../src/policy/ledger.js';
import { RateLimiter } from '../../src/policy/rate-limiter.js';
import { resolveRateLimitOptions } from '../../src/policy/rate-options.js';
import {
  type Json,
  type MemoryStore,
  memoryStore,
  type StateStore,
} from '../../src/store/index.js';
import { fakeClock, flush } from '../helpers/clock.js';
import { settled } from '../helpers/harness.js';
import { statusServer, type TestServer } from '../helpers/server.js';
import { deferred } from '../helpers/stores.js';
import { closeAfterEach } from '../helpers/teardown.js';

const cleanup = closeAfterEach();
afterEach(() => {
  vi.restoreAllMocks();
});

/** A server that answers each request with the next status of `script` (then the last). */
async function scripted(script: number[]): Promise<TestServer> {
  return cleanup.add(await statusServer(script));
}

/** Fractions rounded to 9 significant digits: the limiter's decays are folded at a mean time. */
function rounded(value: Json | undefined): unknown {
  if (typeof value === 'number') {
    return Number.isInteger(value) ? value : Number(value.toPrecision(9));
  }
  if (Array.isArray(value)) return value.map(rounded);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, rounded(v)]));
  }
  return value;
}

function snapshot(store: MemoryStore, key: string, now: number) {
  return rounded({
    breaker: store.peek(`breaker:${key}`, now) ?? null,
    budget: store.peek(`budget:${key}`, now) ?? null,
    rate: store.peek(`rate:${key}`, now) ?? null,
  } as Json);
}

/**
 * Steps of [ms to advance before the request, the status it gets]: quiet
 * runs within one period, across periods, buckets and seconds, broken by
 * 503s (breaker failures) and 429s (the limiter's cuts).
 */
const STEPS: [number, number][] = [];
{
  let seed = 7;
  const next = (): number => {
    seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
    return seed / 2_147_483_648;
  };
  const gaps = [0, 0, 1, 3, 7, 20, 49, 50, 120, 499, 600, 1_000];
  for (let i = 0; i < 400; i++) {
    const r = next();
    const status = r < 0.04 ? 503 : r < 0.08 ? 429 : 200;
    STEPS.push([gaps[Math.floor(next() * gaps.length)]!, status]);
  }
}

describe('the quiet ledger', () => {
  test('leaves the store as asking the policies on every request does, at every failure', async () => {
    // One key for both servers, so that the two runs' states are comparable.
    const key = () => 'upstream';
    const run = async (store: StateStore, inner: MemoryStore) => {
      const server = await scripted(STEPS.map(([, status]) => status));
      const clock = fakeClock();
      // No deadline: every pending sleep is a policy's wait, which the loop below lets pass.
      const fetch = createFetch({ clock, store, key, retry: false, timeout: false });
      const seen: unknown[] = [];
      for (const [gap, status] of STEPS) {
        if (gap > 0) await clock.advance(gap);
        const result = settled(fetch(server.url));
        while (!result.done) {
          if (clock.remaining().length > 0) await clock.runNext();
          else await new Promise((resolve) => setImmediate(resolve));
        }
        if (result.value instanceof Response) await result.value.arrayBuffer();
        await flush(2);
        // A failure is a policy call: whatever was counted has been handed over by now.
        if (status !== 200) seen.push([status, snapshot(inner, 'upstream', clock.now())]);
      }
      return seen;
    };
    const quiet = memoryStore();
    const asked = memoryStore();
    const folded = await run(quiet, quiet);
    const oneByOne = await run(deferred(asked), asked);
    expect(folded).toEqual(oneByOne);
    // The comparison is of something: failures were seen, successes counted beside them.
    expect(folded.length).toBeGreaterThan(20);
    const last = folded.at(-1) as [number, { breaker: { buckets: number[][] } | null }];
    expect(last[1].breaker).not.toBeNull();
  });

  test('a quiet run asks the policies once a period, not once a request', async () => {
    const server = await scripted([200]);
    const clock = fakeClock();
    const fetch = createFetch({ clock, store: memoryStore(), retry: false });
    const admit = vi.spyOn(CircuitBreaker.prototype, 'admit');
    const record = vi.spyOn(CircuitBreaker.prototype, 'record');
    const pass = vi.spyOn(RateLimiter.prototype, 'pass');
    const learn = vi.spyOn(RateLimiter.prototype, 'onResponse');
    const deposit = vi.spyOn(RetryBudget.prototype, 'deposit');
    for (let i = 0; i < 40; i++) await (await fetch(server.url)).arrayBuffer();
    // The first request arms a period (and is told to the policies); the other 39 are counted.
    for (const spy of [admit, record, pass, learn]) expect(spy).toHaveBeenCalledTimes(1);
    expect(deposit).toHaveBeenCalledTimes(1);
    // The period ends with the meter's bucket: the next request takes the full path again.
    await clock.advance(500);
    await (await fetch(server.url)).arrayBuffer();
    expect(admit).toHaveBeenCalledTimes(2);
    expect(server.received.length).toBe(41);
  });

  test('any policy that is not quiet keeps every request on the full path', async () => {
    const server = await scripted([200]);
    const clock = fakeClock();
    const deferredStore = deferred(memoryStore());
    const cases = [
      createFetch({ clock, store: deferredStore, retry: false }),
      createFetch({ clock, retry: false, concurrency: 4 }),
      createFetch({ clock, retry: false, hold: () => 0 }),
      createFetch({ clock, retry: false, rateLimit: { rps: 1_000, burst: 1_000 } }),
    ];
    const pass = vi.spyOn(RateLimiter.prototype, 'onResponse');
    for (const fetch of cases) {
      pass.mockClear();
      for (let i = 0; i < 5; i++) await (await fetch(server.url)).arrayBuffer();
      expect(pass).toHaveBeenCalledTimes(5);
    }
  });

  test('counts a quiet run without a store call, and hands it over at the next failure', async () => {
    const server = await scripted([...Array<number>(25).fill(200), 503]);
    const origin = new URL(server.url).origin;
    const clock = fakeClock();
    const store = memoryStore();
    const fetch = createFetch({ clock, store, retry: false });
    for (let i = 0; i < 25; i++) await (await fetch(server.url)).arrayBuffer();
    // 25 successes, and nothing written: the breaker's quick path would not have written either,
    // and the ledger has not even asked it.
    expect(store.peek(`breaker:${origin}`, clock.now())).toBeUndefined();
    const failed = await fetch(server.url);
    await failed.arrayBuffer();
    await flush(2);
    const breaker = store.peek(`breaker:${origin}`, clock.now()) as {
      buckets: [number, number, number][];
    };
    expect(breaker.buckets.map(([, failures, successes]) => [failures, successes])).toEqual([
      [1, 25],
    ]);
    expect(server.received.length).toBe(26);
  });

  test('another client’s write to a shared store voids the period at once', async () => {
    const server = await scripted([200]);
    const failing = await scripted([503]);
    const clock = fakeClock();
    const store = memoryStore();
    // One key for both origins: the two clients share one circuit.
    const options = {
      clock,
      store,
      retry: false as const,
      key: () => 'upstream',
      breaker: { consecutiveFailures: 1 },
    };
    const a = createFetch(options);
    const b = createFetch(options);
    for (let i = 0; i < 3; i++) await (await a(server.url)).arrayBuffer();
    await (await b(failing.url)).arrayBuffer();
    await flush(2);
    // Within a's quiet period, and yet a sees the circuit b opened.
    const refused = await a(server.url).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(CircuitOpenError);
    expect(server.received.length).toBe(3);
  });
});

describe('the quiet ledger and the limiter’s short-term rates', () => {
  // Whole milliseconds (the system clock's: a table of weights) and fractions (Math.exp).
  test.each([3, 3.25])(
    'a period’s sends and successes decay as if counted one by one, %s ms apart',
    async (step) => {
      const clock = fakeClock();
      const key = 'upstream';
      const resolved = resolveRateLimitOptions('adaptive');
      if (resolved === false) throw new Error('unreachable');
      const foldedStore = memoryStore();
      const askedStore = memoryStore();
      const folded = new RateLimiter(resolved, foldedStore, clock);
      const asked = new RateLimiter(resolved, askedStore, clock);
      const ledgers = new Ledgers(
        { breaker: undefined, budget: undefined, limiter: folded },
        foldedStore,
      );
      const t0 = clock.now();
      // Enough responses over enough time for a 429 to engage the key.
      for (let t = t0; t < t0 + 600; t += 50) {
        for (const limiter of [folded, asked]) {
          limiter.pass(key, t);
          limiter.onResponse(key, 200, { sentAt: t }, t);
        }
      }
      // A burst within one period: the arming send, then 40 sends and successes over 120 ms.
      const from = t0 + 1_000;
      folded.pass(key, from);
      asked.pass(key, from);
      ledgers.arm(key, { release: noop, ticket: undefined }, from);
      for (let i = 1; i <= 40; i++) {
        const t = from + i * step;
        const gate = ledgers.send(key, t);
        expect(gate).toBeDefined();
        expect(ledgers.succeeded(gate!, t + 1)).toBe(true);
        asked.pass(key, t);
        asked.onResponse(key, 200, { sentAt: t }, t + 1);
      }
      ledgers.settle(key, true);
      // The release of a backlog after an outage engages the key at its short-term rates
      // (rate-limiter.ts, `#feedback`): they are in the state it writes.
      await clock.advance(from + 40 * step + 5 - clock.now());
      const at = clock.now();
      await folded.onResponse(key, 429, { sentAt: at, released: true }, at);
      await asked.onResponse(key, 429, { sentAt: at, released: true }, at);
      const state = askedStore.peek(`rate:${key}`, at);
      expect(state).toBeDefined();
      expect(rounded(foldedStore.peek(`rate:${key}`, at))).toEqual(rounded(state));
    },
  );
});
