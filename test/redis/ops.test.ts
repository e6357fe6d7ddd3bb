/**
 * Differential test: random sequences of every store operation run through
 * memoryStore (the JavaScript reference) and through the Redis scripts, with
 * the time taken from the caller (a test-only switch of the store) so that
 * both see the same `now`. Results, stored states and expiries must agree.
 */
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BreakerConfig, breakerAdmit, breakerRecord } from '../../src/policy/breaker/ops.js';
import { type BudgetArgs, budgetDeposit, budgetWithdraw } from '../../src/policy/budget/budget.js';
import {
  type RateConfig,
  rateAcquire,
  rateFeedback,
  rateRefund,
} from '../../src/policy/rate/ops.js';
import { createRedisStore, type RedisStore } from '../../src/redis/store.js';
import { memoryStore } from '../../src/store/memory.js';
import type { Json, StoreOperation, StoreStatus } from '../../src/store/store.js';
import { LIBRARIES, openClient, type TestClient } from './helpers/clients.js';
import { assertClose, inexact } from './helpers/close.js';
import { type RedisServer, requireRedis, startRedis } from './helpers/redis-server.js';

const ready = requireRedis();
const T0 = 1_767_225_600_000;

let server: RedisServer;
let client: Redis;
/** The client under test (the describe's library); `client` (ioredis) inspects Redis. */
let own: TestClient;
let sequence = 0;

/** A store whose scripts take the caller's time; it must stay shared (a fallback would hide them). */
function callerTimeStore(): { store: RedisStore; statuses: StoreStatus[] } {
  const store = createRedisStore(
    { client: own.client, prefix: `staunch-test:${process.pid}:`, timeout: 10_000 },
    { callerTime: true },
  );
  const statuses: StoreStatus[] = [];
  store.onStatus((status) => statuses.push(status));
  return { store, statuses };
}

beforeAll(async () => {
  if (!ready) return;
  server = await startRedis();
  client = new Redis(server.url);
});

afterAll(async () => {
  if (!ready) return;
  console.info(
    `ops differential: ${inexact.count} of ${inexact.total} comparisons equal within 1e-12 only`,
  );
  await client.quit();
  await server.stop();
});

type Call = { op: StoreOperation<Json, Json>; args: Json };
type Step = { dt: number; call: (now: number, history: Json[]) => Call };

/** Runs `steps` on a fresh key through both stores, comparing after each. */
async function compare(family: string, steps: Step[]): Promise<void> {
  const key = `${family}:${sequence++}`;
  const { store, statuses } = callerTimeStore();
  const redisKey = store.redisKey(key);
  const memory = memoryStore();
  const history: Json[] = [];
  let now = T0;
  for (const [i, step] of steps.entries()) {
    now += step.dt;
    // Expiry happens at the caller's time in the memory store: mirror it.
    if (memory.peek(key, now) === undefined) await client.del(redisKey);
    const { op, args } = step.call(now, history);
    const before = memory.peek(key, now);
    const update = op.apply(structuredClone(before), args, now);
    const expected = memory.run(key, op, args, now);
    const actual = await store.run(key, op, args, now);
    const where = `${family} step ${i} ${op.name}(${JSON.stringify(args)}) at +${now - T0} on ${JSON.stringify(before)}`;
    assertClose(actual, expected, `${where}: result`);
    expect(statuses).toEqual([]);
    const reply = await client.multi().get(redisKey).pttl(redisKey).exec();
    const raw = reply?.[0]?.[1] as string | null;
    const pttl = reply?.[1]?.[1] as number;
    const state = memory.peek(key, now);
    assertClose(raw === null ? undefined : JSON.parse(raw), state, `${where}: state`);
    if (state !== undefined) {
      if (update.ttl >= 2 ** 53) expect(pttl, where).toBe(-1);
      else {
        expect(pttl, `${where}: pttl`).toBeLessThanOrEqual(Math.ceil(update.ttl));
        expect(pttl, `${where}: pttl`).toBeGreaterThan(Math.ceil(update.ttl) - 1_000);
      }
    }
    history.push(expected);
  }
}

const dt = fc.oneof(
  { weight: 3, arbitrary: fc.integer({ min: 0, max: 30 }) },
  { weight: 4, arbitrary: fc.integer({ min: 0, max: 300 }) },
  { weight: 2, arbitrary: fc.integer({ min: 300, max: 30_000 }) },
  { weight: 1, arbitrary: fc.integer({ min: -200, max: 0 }) },
);
const ms = (min: number, max: number) =>
  fc.oneof(
    fc.integer({ min: Math.ceil(min), max: Math.floor(max) }),
    fc.double({ min, max, noNaN: true }),
  );

const breakerConfig: fc.Arbitrary<BreakerConfig> = fc
  .record({
    failureRatio: fc.double({ min: 0.01, max: 1, noNaN: true }),
    minimumVolume: fc.integer({ min: 1, max: 8 }),
    window: ms(100, 20_000),
    breakDuration: ms(50, 5_000),
    extra: fc.integer({ min: 0, max: 20_000 }),
    halfOpenProbes: fc.integer({ min: 1, max: 3 }),
    consecutiveFailures: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 5 })),
    probeInterval: ms(20, 2_000),
  })
  .map(({ extra, ...c }) => ({ ...c, maxBreakDuration: c.breakDuration + extra }));

function breakerSteps(cfg: BreakerConfig): fc.Arbitrary<Step[]> {
  const outcome = fc.constantFrom('success', 'failure', 'failure', 'neutral', 'cancelled');
  // Plain admissions, admissions of a caller that will wait, and a waiting room's peeks.
  const admit = fc
    .record({
      dt,
      lease: fc.integer({ min: 50, max: 6_000 }),
      waitMs: fc.oneof(fc.constant(0), fc.constant(0), ms(1, 3_000)),
      peek: fc.nat(3).map((n) => n === 0),
      quick: fc.boolean(),
      // The waiters a quick caller reports (0: not said); 7 and 700 give ceilings off the grid.
      waiters: fc.constantFrom(0, 1, 7, 40, 700),
    })
    .map(
      ({ dt, lease, waitMs, peek, quick, waiters }): Step => ({
        dt,
        call: () => ({
          op: breakerAdmit as never,
          args: {
            cfg,
            leaseMs: lease,
            ...(waitMs > 0 && { waitMs }),
            ...(peek && { peek: true }),
            ...(quick && { quick: true }),
            ...(waiters > 0 && { waiters }),
          },
        }),
      }),
    );
  const record = fc
    .record({
      dt,
      // Mostly the latest ticket (a probe, when one was just admitted), sometimes an older or forged one.
      pick: fc.oneof({ weight: 3, arbitrary: fc.constant(-1) }, { weight: 2, arbitrary: fc.nat() }),
      outcome,
      forged: fc.nat(5).map((n) => n === 0),
      gen: fc.nat(3),
      // A batch of successes counted locally: none, in this bucket, or some buckets back.
      batch: fc.option(fc.record({ back: fc.nat(12), count: fc.integer({ min: 1, max: 40 }) }), {
        nil: undefined,
      }),
      quick: fc.boolean(),
      waiters: fc.constantFrom(0, 1, 7, 40, 700),
    })
    .map(
      ({ dt, pick, outcome, forged, gen, batch, quick, waiters }): Step => ({
        dt,
        call: (now, history) => {
          const tickets = history.filter(
            (r): r is { ok: true; gen: number; probe: number | null } =>
              typeof r === 'object' && r !== null && (r as { ok?: unknown }).ok === true,
          );
          const index = pick < 0 ? tickets.length - 1 : pick % tickets.length;
          const t = tickets.length > 0 && !forged ? tickets[index]! : undefined;
          const base = t
            ? { cfg, gen: t.gen, probe: t.probe, outcome }
            : { cfg, gen: gen === 0 ? 0 : now - gen, probe: gen === 3 ? now : null, outcome };
          const width = Math.max(1, Math.floor(cfg.window / 10));
          const args =
            batch === undefined
              ? base
              : {
                  ...base,
                  successes: [now - (now % width) - batch.back * width, batch.count],
                };
          const told = waiters > 0 ? { ...args, waiters } : args;
          return { op: breakerRecord as never, args: quick ? { ...told, quick } : told };
        },
      }),
    );
  return fc.array(fc.oneof(admit, record, record), { minLength: 1, maxLength: 60 });
}

function budgetSteps(args: BudgetArgs): fc.Arbitrary<Step[]> {
  const step = fc.record({ dt, deposit: fc.boolean() }).map(
    ({ dt, deposit }): Step => ({
      dt,
      call: () => ({ op: (deposit ? budgetDeposit : budgetWithdraw) as never, args }),
    }),
  );
  return fc.array(step, { minLength: 1, maxLength: 60 });
}

const adaptive = (memoryMs: number, beta: number): RateConfig => ({
  rps: null,
  burst: null,
  memoryMs,
  beta,
  scale: 1 - beta,
  minRate: 0.5,
  burstSeconds: 0.1,
  holdoffMs: 1000,
});
const rateConfig: fc.Arbitrary<RateConfig> = fc.oneof(
  fc
    .record({ rps: ms(0.5, 200), burst: ms(1, 20) })
    .map(({ rps, burst }) => ({ ...adaptive(300_000, 0.7), rps, burst })),
  fc
    .record({
      memoryMs: fc.integer({ min: 2_000, max: 300_000 }),
      beta: fc.double({ min: 0.3, max: 0.9, noNaN: true }),
    })
    .map(({ memoryMs, beta }) => adaptive(memoryMs, beta)),
);

function lastEpoch(history: Json[]): number | null {
  for (let i = history.length - 1; i >= 0; i--) {
    const r = history[i] as { epoch?: unknown } | null;
    if (r !== null && typeof r === 'object' && typeof r.epoch === 'number') return r.epoch;
  }
  return null;
}

function rateSteps(cfg: RateConfig): fc.Arbitrary<Step[]> {
  const epochOf = (mode: number, history: Json[]): number | null =>
    mode === 0 ? null : mode === 1 ? (lastEpoch(history) ?? 0) : mode - 2;
  const acquire = fc
    .record({
      dt,
      maxWait: fc.option(fc.integer({ min: 0, max: 5_000 }), { nil: null }),
      epoch: fc.nat(4),
    })
    .map(
      ({ dt, maxWait, epoch }): Step => ({
        dt,
        call: (_now, history) => ({
          op: rateAcquire as never,
          args: { cfg, maxWait, epoch: epochOf(epoch, history) },
        }),
      }),
    );
  const refund = fc.record({ dt, epoch: fc.nat(3) }).map(
    ({ dt, epoch }): Step => ({
      dt,
      call: (_now, history) => ({
        op: rateRefund as never,
        args: { cfg, epoch: epochOf(epoch === 0 ? 1 : epoch, history) ?? 0 },
      }),
    }),
  );
  const feedback = (signals: string[]) =>
    fc
      .record({
        dt,
        signal: fc.constantFrom(...signals),
        pause: fc.option(fc.integer({ min: -1_000, max: 8_000 }), { nil: null, freq: 3 }),
        // Mostly near the meter's own rate, so that the CUBIC curve (not its ceiling) decides.
        measured: fc.oneof(
          { weight: 1, arbitrary: fc.constant(0) },
          { weight: 4, arbitrary: fc.double({ min: 0, max: 8, noNaN: true }) },
          { weight: 1, arbitrary: fc.double({ min: 0, max: 200, noNaN: true }) },
        ),
        accepted: fc.oneof(
          { weight: 1, arbitrary: fc.constant(0) },
          { weight: 3, arbitrary: fc.double({ min: 0, max: 8, noNaN: true }) },
          { weight: 1, arbitrary: fc.double({ min: 0, max: 200, noNaN: true }) },
        ),
        fraction: fc.oneof(fc.constant(0), fc.double({ min: 0, max: 1, noNaN: true })),
        sent: fc.option(fc.integer({ min: -3_000, max: 50 }), { nil: null }),
        joining: fc.boolean(),
        // A provider's stated refill rate on some responses (absent, null, or a rate).
        stated: fc.oneof(
          { weight: 3, arbitrary: fc.constant(undefined) },
          { weight: 1, arbitrary: fc.constant(null) },
          { weight: 2, arbitrary: fc.double({ min: 0, max: 12, noNaN: true }) },
        ),
        // A RateLimit-Policy ceiling on some responses (absent, null, 0, or a rate: at least
        // 1 per 300.1 s, what the slowest policy paced gives).
        ceiling: fc.oneof(
          { weight: 3, arbitrary: fc.constant(undefined) },
          { weight: 1, arbitrary: fc.constantFrom(null, 0) },
          { weight: 2, arbitrary: fc.double({ min: 0.003, max: 12, noNaN: true }) },
        ),
        // The recent accepted rate an engagement's curve regains (absent, or a rate).
        peak: fc.option(fc.double({ min: 0, max: 300, noNaN: true }), { nil: undefined }),
      })
      .map(
        ({
          dt,
          signal,
          pause,
          measured,
          accepted,
          fraction,
          sent,
          joining,
          stated,
          ceiling,
          peak,
        }): Step => ({
          dt,
          call: (now) => ({
            op: rateFeedback as never,
            args: {
              cfg,
              signal,
              pauseUntil: pause === null ? null : now + pause,
              measured,
              accepted,
              fraction,
              sentAt: sent === null ? null : now + sent,
              ...(joining && { joining }),
              ...(stated !== undefined && { stated }),
              ...(ceiling !== undefined && { ceiling }),
              ...(peak !== undefined && { peak }),
            },
          }),
        }),
      );
  const body = fc.array(
    fc.oneof(
      { weight: 3, arbitrary: acquire },
      { weight: 1, arbitrary: refund },
      { weight: 3, arbitrary: feedback(['success']) },
      { weight: 1, arbitrary: feedback(['throttle', 'pause', 'policy']) },
    ),
    { minLength: 1, maxLength: 80 },
  );
  // An adaptive key does nothing until a throttle engages it: start most sequences with one.
  const start = fc.option(feedback(['throttle', 'policy']), { nil: undefined, freq: 5 });
  const mixed = fc
    .tuple(start, body)
    .map(([first, rest]) => (first === undefined ? rest : [first, ...rest]));
  if (cfg.rps !== null) return mixed;
  // A climb: sends at a steady pace, each answered by a success, so that the
  // rate follows the CUBIC curve between the last decrease and twice the meter.
  const pace = fc.integer({ min: 20, max: 400 });
  const climb = fc
    .tuple(
      feedback(['throttle']),
      pace,
      fc.array(
        fc.oneof(
          { weight: 12, arbitrary: fc.constant(0) },
          { weight: 2, arbitrary: fc.constant(1) },
        ),
        {
          minLength: 10,
          maxLength: 120,
        },
      ),
      feedback(['throttle']),
    )
    .map(([first, gap, kinds, throttle]) => [
      first,
      ...kinds.flatMap((kind, i): Step[] => {
        if (kind === 1) return [{ ...throttle, dt: gap }];
        const send = {
          dt: gap,
          call: () => ({ op: rateAcquire as never, args: { cfg, maxWait: null, epoch: null } }),
        };
        const ok = {
          dt: i % 3,
          call: () => ({
            op: rateFeedback as never,
            args: {
              cfg,
              signal: 'success',
              pauseUntil: null,
              measured: 1000 / gap,
              accepted: 1000 / gap,
              fraction: 0,
              sentAt: null,
            },
          }),
        };
        return [send, ok];
      }),
    ]);
  // A judgment: engaged with a small 429 fraction, then responses to requests
  // sent within the hold-off (a few refused), then a 429 after it, so that
  // the futility rule (hold or cut) and the lowest refused rate decide.
  const judged = fc
    .record({
      fraction: fc.double({ min: 0.05, max: 0.25, noNaN: true }),
      gap: fc.integer({ min: 15, max: 60 }),
      refused: fc.array(
        fc.nat(6).map((n) => n === 0),
        { minLength: 12, maxLength: 50 },
      ),
      rate: fc.double({ min: 5, max: 100, noNaN: true }),
    })
    .map(({ fraction, gap, refused, rate }): Step[] => {
      const fb = (signal: string, extra: object) => ({
        op: rateFeedback as never,
        args: {
          cfg,
          signal,
          pauseUntil: null,
          measured: rate,
          accepted: rate * (1 - fraction),
          fraction,
          sentAt: null,
          ...extra,
        },
      });
      return [
        { dt: 0, call: () => fb('throttle', {}) },
        ...refused.map(
          (r): Step => ({
            dt: gap,
            call: (now) => fb(r ? 'throttle' : 'success', { sentAt: now - 5 }),
          }),
        ),
        { dt: 1_000, call: (now) => fb('throttle', { sentAt: now - 5 }) },
      ];
    });
  return fc.oneof(mixed, climb, judged);
}

describe.runIf(ready).each(LIBRARIES)(
  'the Lua scripts agree with the JavaScript operations, %s client',
  (library) => {
    beforeAll(async () => {
      own = openClient(library, server.url);
      await own.connected;
    });
    afterAll(() => own.end());

    it('breaker: admit and record', { timeout: 120_000 }, async () => {
      await fc.assert(
        fc.asyncProperty(
          breakerConfig.chain((cfg) => breakerSteps(cfg)),
          (steps) => compare('breaker', steps),
        ),
        { numRuns: 300 },
      );
    });

    it('budget: deposit and withdraw', { timeout: 120_000 }, async () => {
      const args = fc.record({
        ratio: fc.double({ min: 0, max: 1.5, noNaN: true }),
        minPerSecond: fc.oneof(fc.constant(0), fc.double({ min: 0, max: 30, noNaN: true })),
        memoryMs: fc.integer({ min: 500, max: 20_000 }),
      });
      await fc.assert(
        fc.asyncProperty(
          args.chain((a) => budgetSteps(a)),
          (steps) => compare('budget', steps),
        ),
        { numRuns: 200 },
      );
    });

    it('rate: acquire, refund and feedback, fixed and adaptive', { timeout: 180_000 }, async () => {
      await fc.assert(
        fc.asyncProperty(
          rateConfig.chain((cfg) => rateSteps(cfg)),
          (steps) => compare('rate', steps),
        ),
        { numRuns: 400 },
      );
    });

    it('states of another shape read as absent, as in JavaScript', async () => {
      const cfg: BreakerConfig = {
        failureRatio: 0.5,
        minimumVolume: 2,
        window: 1000,
        breakDuration: 500,
        maxBreakDuration: 4000,
        probeInterval: 1000,
        halfOpenProbes: 1,
        consecutiveFailures: 0,
      };
      const rate = adaptive(60_000, 0.7);
      const cases: [string, Call][] = [];
      for (const raw of ['not json', '[1,2]', '"text"', '{}', '{"state":"ajar"}', '7']) {
        cases.push([
          raw,
          { op: breakerRecord as never, args: { cfg, gen: 0, probe: null, outcome: 'failure' } },
        ]);
        cases.push([
          raw,
          { op: budgetWithdraw as never, args: { ratio: 0.1, minPerSecond: 2, memoryMs: 10_000 } },
        ]);
        cases.push([
          raw,
          {
            op: rateFeedback as never,
            args: {
              cfg: rate,
              signal: 'throttle',
              pauseUntil: null,
              measured: 10,
              accepted: 8,
              fraction: 0.2,
              sentAt: null,
            },
          },
        ]);
      }
      const { store, statuses } = callerTimeStore();
      for (const [raw, { op, args }] of cases) {
        const key = `shape:${sequence++}`;
        await client.set(store.redisKey(key), raw, 'PX', 60_000);
        let parsed: Json | undefined;
        try {
          parsed = JSON.parse(raw) as Json;
        } catch {
          parsed = undefined;
        }
        // Unparseable text is a state of another shape: JavaScript sees some object it cannot read.
        const expected = op.apply(parsed === undefined ? { garbage: true } : parsed, args, T0);
        const actual = await store.run(key, op, args, T0);
        assertClose(actual, expected.result, `${op.name} on ${raw}`);
        expect(statuses).toEqual([]);
      }
    });
  },
);
