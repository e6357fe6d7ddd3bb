/**
 * A Redis that refuses scripts: EVAL and EVALSHA renamed away, EVAL alone
 * renamed (EVALSHA answers NOSCRIPT, then EVAL is refused), or forbidden by
 * an ACL. The store sees it on the first decision, goes local with one
 * `storeDegraded` naming `scripting-disabled`, never holds a request back,
 * and checks again further apart each time (Redis counts the refusals: its
 * `errorstats`). Date alone is faked (the store's clock for its re-checks);
 * the sockets and timers are real.
 */
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createFetch } from '../../src/index.js';
import { budgetDeposit } from '../../src/policy/budget/budget.js';
import type { RedisLibrary } from '../../src/redis/connect.js';
import { RECHECK_MAX, recheckDelay, scriptingRefusal } from '../../src/redis/scripting.js';
import { createRedisStore } from '../../src/redis/store.js';
import type { StoreStatus } from '../../src/store/store.js';
import { httpServer, type TestServer } from '../helpers/server.js';
import { LIBRARIES, openClient, type TestClient } from './helpers/clients.js';
import { type RedisServer, requireRedis, startRedis } from './helpers/redis-server.js';

const ready = requireRedis(true);
const budgetArgs = { ratio: 0.1, minPerSecond: 10, memoryMs: 10_000 };
/** In every key: Redis echoes a refused command's first arguments, the event must not. */
const SENTINEL = 'sentinel-7731';

const VARIANTS = [
  { name: 'EVAL and EVALSHA renamed', renamed: ['EVAL', 'EVALSHA'], refused: 'evalsha' },
  { name: 'EVAL renamed, EVALSHA kept', renamed: ['EVAL'], refused: 'eval' },
] as const;

const servers = new Map<string, RedisServer>();
let upstream: TestServer;

beforeAll(async () => {
  if (!ready) return;
  for (const variant of VARIANTS) {
    const args = variant.renamed.flatMap((command) => ['--rename-command', command, '']);
    servers.set(variant.name, await startRedis(args));
  }
  servers.set('acl', await startRedis());
  upstream = await httpServer((_req, res) => res.end('ok'));
});

afterAll(async () => {
  if (!ready) return;
  await upstream.close();
  await Promise.all([...servers.values()].map((s) => s.stop()));
});

afterEach(() => {
  vi.useRealTimers();
});

/** Error replies Redis sent, by code (`ERR`, `NOSCRIPT`, `NOPERM`), from its own statistics. */
async function errorReplies(admin: Redis, code: string): Promise<number> {
  const info = await admin.info('errorstats');
  const m = new RegExp(`errorstat_${code}:count=(\\d+)`).exec(info);
  return m ? Number(m[1]) : 0;
}

interface Harness {
  own: TestClient;
  admin: Redis;
  statuses: StoreStatus[];
  store: ReturnType<typeof createRedisStore>;
}

async function harness(
  library: RedisLibrary,
  server: RedisServer,
  probeInterval: number,
): Promise<Harness> {
  const own = openClient(library, server.url);
  await own.connected;
  const admin = new Redis(server.url);
  await admin.config('RESETSTAT');
  const store = createRedisStore({
    client: own.client,
    prefix: `${SENTINEL}:${library}:`,
    probeInterval,
    timeout: 5_000,
  });
  const statuses: StoreStatus[] = [];
  store.onStatus((s) => statuses.push(s));
  return { own, admin, statuses, store };
}

describe.runIf(ready).each(LIBRARIES)('Redis without scripting, %s client', (library) => {
  for (const variant of VARIANTS) {
    it(`${variant.name}: requests go through, one storeDegraded names scripting-disabled`, async () => {
      const { own, admin, statuses, store } = await harness(
        library,
        servers.get(variant.name)!,
        60_000,
      );
      try {
        const fetch = createFetch({ store, retry: false, rateLimit: { rps: 1_000, burst: 100 } });
        const before = upstream.received.length;
        for (let i = 0; i < 10; i++) {
          const res = await fetch(`${upstream.url}/r/${i}`);
          expect(res.status).toBe(200);
          await res.text();
        }
        expect(upstream.received.length - before).toBe(10);
        expect(statuses).toHaveLength(1);
        const [degraded] = statuses;
        expect(degraded?.status).toBe('degraded');
        expect(degraded?.error).toMatch(
          new RegExp(
            `^redis: scripting-disabled \\(ERR unknown command '${variant.refused}'\\)$`,
            'i',
          ),
        );
        expect(degraded?.error).not.toContain(SENTINEL);
        expect(store.status).toBe('degraded');
        // Seen on the first decision: the decisions of the first request (a
        // budget deposit and a breaker admit sent together, a token) are
        // refused; every later one is local and never reaches Redis.
        const refused = await errorReplies(admin, 'ERR');
        expect(refused).toBeGreaterThanOrEqual(1);
        expect(refused).toBeLessThanOrEqual(3);
        expect(store.run('budget:later', budgetDeposit, budgetArgs, 0)).not.toBeInstanceOf(Promise);
        expect(await errorReplies(admin, 'ERR')).toBe(refused);
      } finally {
        own.end();
        admin.disconnect();
      }
    });
  }

  it('re-checks scripting at probeInterval, doubling after each refusal', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const t0 = Date.now();
    const { own, admin, statuses, store } = await harness(
      library,
      servers.get(VARIANTS[0].name)!,
      1_000,
    );
    try {
      await store.run('budget:k', budgetDeposit, budgetArgs, 0);
      expect(statuses.map((s) => s.status)).toEqual(['degraded']);
      expect(await errorReplies(admin, 'ERR')).toBe(1);
      // Re-checks 1, 2, 4 and 8 s after the refusal; a local decision every 250 ms meanwhile.
      const rechecks = [1_000, 3_000, 7_000, 15_000];
      for (let at = 250; at <= 16_000; at += 250) {
        vi.setSystemTime(t0 + at);
        expect(store.run('budget:k', budgetDeposit, budgetArgs, at)).not.toBeInstanceOf(Promise);
        const expected = 1 + rechecks.filter((r) => r <= at).length;
        await vi.waitFor(async () => expect(await errorReplies(admin, 'ERR')).toBe(expected));
      }
      expect(statuses.map((s) => s.status)).toEqual(['degraded']);
    } finally {
      own.end();
      admin.disconnect();
    }
  });

  it('an ACL that forbids scripts (NOPERM): local until scripts are allowed again, then shared', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const t0 = Date.now();
    const { own, admin, statuses, store } = await harness(library, servers.get('acl')!, 1_000);
    try {
      await admin.call('ACL', 'SETUSER', 'default', '-eval', '-evalsha');
      await store.run('budget:acl', budgetDeposit, budgetArgs, 0);
      expect(statuses).toHaveLength(1);
      expect(statuses[0]?.error).toMatch(/^redis: scripting-disabled \(NOPERM .*'evalsha'.*\)$/);
      vi.setSystemTime(t0 + 1_000);
      store.run('budget:acl', budgetDeposit, budgetArgs, 1_000);
      await vi.waitFor(async () => expect(await errorReplies(admin, 'NOPERM')).toBe(2));
      await admin.call('ACL', 'SETUSER', 'default', '+eval', '+evalsha');
      // Not before the next re-check, 2 s after the last.
      vi.setSystemTime(t0 + 2_500);
      expect(store.run('budget:acl', budgetDeposit, budgetArgs, 2_500)).not.toBeInstanceOf(Promise);
      expect(statuses).toHaveLength(1);
      vi.setSystemTime(t0 + 3_000);
      store.run('budget:acl', budgetDeposit, budgetArgs, 3_000);
      await vi.waitFor(() =>
        expect(statuses.map((s) => s.status)).toEqual(['degraded', 'recovered']),
      );
      // Shared again: the next decision is Redis's.
      const shared = store.run('budget:acl', budgetDeposit, budgetArgs, 3_000);
      expect(shared).toBeInstanceOf(Promise);
      expect(await shared).toBeCloseTo(10.1, 3);
      expect(store.status).toBe('shared');
    } finally {
      await admin.call('ACL', 'SETUSER', 'default', '+eval', '+evalsha');
      own.end();
      admin.disconnect();
    }
  });
});

describe('scriptingRefusal', () => {
  it.each([
    // Redis 7 and Valkey (the command as the client sent it), Redis 6 (backticks), an ACL.
    [
      "ERR unknown command 'evalsha', with args beginning with: 'ab12' '1' 'staunch:{k}' ",
      "scripting-disabled (ERR unknown command 'evalsha')",
    ],
    [
      "ERR unknown command 'EVAL', with args beginning with: ",
      "scripting-disabled (ERR unknown command 'EVAL')",
    ],
    [
      'ERR unknown command `evalsha`, with args beginning with: `x`, ',
      'scripting-disabled (ERR unknown command `evalsha`)',
    ],
    [
      "NOPERM this user has no permissions to run the 'evalsha' command",
      "scripting-disabled (NOPERM this user has no permissions to run the 'evalsha' command)",
    ],
  ])('%s: a refusal', (message, cause) => {
    expect(scriptingRefusal(new Error(message))?.message).toBe(cause);
  });

  it.each([
    "ERR unknown command 'get', with args beginning with: 'k' ",
    "ERR unknown command 'evalshax'",
    'NOSCRIPT No matching script. Please use EVAL.',
    "NOPERM this user has no permissions to run the 'set' command",
    'ERR Error running script (call to f_x): @user_script:1: boom',
    'ECONNRESET',
  ])('%s: not a refusal', (message) => {
    expect(scriptingRefusal(new Error(message))).toBeUndefined();
  });

  it('is only about errors', () => {
    expect(scriptingRefusal("ERR unknown command 'evalsha'")).toBeUndefined();
    expect(scriptingRefusal(undefined)).toBeUndefined();
  });
});

describe('recheckDelay', () => {
  it('doubles from probeInterval up to RECHECK_MAX, or probeInterval if longer', () => {
    expect([0, 1, 2, 3].map((n) => recheckDelay(1_000, n))).toEqual([1_000, 2_000, 4_000, 8_000]);
    expect(recheckDelay(1_000, 6)).toBe(RECHECK_MAX);
    expect(recheckDelay(1_000, 60)).toBe(RECHECK_MAX);
    expect(recheckDelay(120_000, 3)).toBe(120_000);
    expect(recheckDelay(0, 5)).toBe(0);
  });
});
