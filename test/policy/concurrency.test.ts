import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type ConcurrencyDecision,
  ConcurrencyLimiter,
  type ConcurrencyOptions,
  resolveConcurrencyOptions,
} from '../../src/policy/concurrency.js';
import { fakeClock } from '../helpers/clock.js';

const KEY = 'https://api.example.com';
const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

function setup(options: ConcurrencyOptions | number) {
  const clock = fakeClock();
  const resolved = resolveConcurrencyOptions(options);
  if (!resolved) throw new Error('unreachable');
  return { clock, limiter: new ConcurrencyLimiter(resolved, clock) };
}

async function granted(p: Promise<ConcurrencyDecision>): Promise<() => void> {
  const d = await p;
  if (!d.ok) throw new Error(`not granted: ${d.reason}`);
  return d.release;
}

describe('resolveConcurrencyOptions', () => {
  it('is off unless asked for', () => {
    expect(resolveConcurrencyOptions(undefined)).toBe(false);
    expect(resolveConcurrencyOptions(false)).toBe(false);
  });

  it('takes a number as max, and defaults queue to 10 × max and queueTimeout to no limit', () => {
    const r = resolveConcurrencyOptions(4);
    expect(r).toEqual({ max: 4, queue: 40, queueTimeout: Number.POSITIVE_INFINITY });
    expect(Object.isFrozen(r)).toBe(true);
    expect(resolveConcurrencyOptions({ max: 2, queue: 0, queueTimeout: 500 })).toEqual({
      max: 2,
      queue: 0,
      queueTimeout: 500,
    });
  });

  it.each<[unknown, ErrorConstructor, string]>([
    [{}, TypeError, 'concurrency.max must be an integer >= 1, got undefined'],
    [true, TypeError, 'concurrency must be an object, got true'],
    [0, RangeError, 'concurrency.max must be an integer >= 1, got 0'],
    [{ max: 1.5 }, RangeError, 'got 1.5'],
    [
      { max: 2, queue: -1 },
      RangeError,
      'concurrency.queue must be an integer >= 0 or Infinity, got -1',
    ],
    [
      { max: 2, queueTimeout: -1 },
      RangeError,
      'concurrency.queueTimeout must be a number of ms >= 0',
    ],
    [{ max: 2, queueTimeout: '1s' }, TypeError, 'got "1s"'],
    [{ max: 2, timeout: 1 }, TypeError, 'concurrency.timeout is not an option (expected one of:'],
  ])('rejects %o', (input, type, message) => {
    const run = () => resolveConcurrencyOptions(input as ConcurrencyOptions);
    expect(run).toThrow(type);
    expect(run).toThrow(message);
  });
});

describe('ConcurrencyLimiter', () => {
  it('grants up to max at once, then queues FIFO, handing each freed slot to the head', async () => {
    const { limiter } = setup(2);
    const a = await granted(limiter.acquire(KEY, 10_000));
    const b = await granted(limiter.acquire(KEY, 10_000));
    const order: string[] = [];
    const tagged = (name: string) => (d: ConcurrencyDecision) => {
      order.push(name);
      return d;
    };
    const c = limiter.acquire(KEY, 10_000).then(tagged('c'));
    const d = limiter.acquire(KEY, 10_000).then(tagged('d'));
    await flush();
    expect(order).toEqual([]);
    expect([limiter.inFlight(KEY), limiter.queued(KEY)]).toEqual([2, 2]);
    b();
    await flush();
    expect(order).toEqual(['c']);
    a();
    await flush();
    expect(order).toEqual(['c', 'd']);
    expect([limiter.inFlight(KEY), limiter.queued(KEY)]).toEqual([2, 0]);
    (await granted(c))();
    (await granted(d))();
    expect(limiter.inFlight(KEY)).toBe(0);
  });

  it('answers full at once when the queue is full', async () => {
    const { limiter } = setup({ max: 1, queue: 1 });
    await granted(limiter.acquire(KEY, 10_000));
    void limiter.acquire(KEY, 10_000);
    expect(await limiter.acquire(KEY, 10_000)).toEqual({ ok: false, reason: 'full' });
  });

  it('with queue 0 refuses as soon as all slots are taken', async () => {
    const { limiter } = setup({ max: 1, queue: 0 });
    await granted(limiter.acquire(KEY, 10_000));
    expect(await limiter.acquire(KEY, 10_000)).toEqual({ ok: false, reason: 'full' });
  });

  it.each([
    [1_000, 5_000, 1_000],
    [5_000, 1_000, 1_000],
    [Number.POSITIVE_INFINITY, 2_500, 2_500],
  ])(
    'with queueTimeout %d and maxWait %d times out after %d ms',
    async (queueTimeout, maxWait, after) => {
      const { limiter, clock } = setup({ max: 1, queueTimeout });
      await granted(limiter.acquire(KEY, 10_000));
      const start = clock.now();
      let result: ConcurrencyDecision | undefined;
      void limiter.acquire(KEY, maxWait).then((d) => {
        result = d;
      });
      await clock.advance(after - 1);
      expect(result).toBeUndefined();
      await clock.advance(1);
      expect(result).toEqual({ ok: false, reason: 'timeout' });
      expect(clock.now() - start).toBe(after);
      expect(limiter.queued(KEY)).toBe(0);
    },
  );

  it('answers timeout at once when there is no time to wait', async () => {
    const { limiter, clock } = setup(1);
    await granted(limiter.acquire(KEY, 10_000));
    expect(await limiter.acquire(KEY, 0)).toEqual({ ok: false, reason: 'timeout' });
    expect(clock.sleeps).toEqual([]);
  });

  it('sets no timer when neither queueTimeout nor maxWait limits the wait', async () => {
    const { limiter, clock } = setup(1);
    await granted(limiter.acquire(KEY, 10_000));
    void limiter.acquire(KEY, Number.POSITIVE_INFINITY);
    expect(clock.sleeps).toEqual([]);
  });

  it('an abort while queued rejects with the reason, leaves the queue consistent and cancels the timer', async () => {
    const { limiter, clock } = setup(1);
    const release = await granted(limiter.acquire(KEY, 10_000));
    const controller = new AbortController();
    const aborted = limiter.acquire(KEY, 10_000, controller.signal);
    const next = limiter.acquire(KEY, 10_000);
    const reason = new Error('caller gave up');
    controller.abort(reason);
    await expect(aborted).rejects.toBe(reason);
    expect(limiter.queued(KEY)).toBe(1);
    expect(clock.remaining()).toEqual([10_000]); // the aborted waiter's timer is gone
    release();
    expect((await next).ok).toBe(true);
  });

  it('rejects at once with an already aborted signal', async () => {
    const { limiter } = setup(1);
    const reason = new Error('already');
    await expect(limiter.acquire(KEY, 1_000, AbortSignal.abort(reason))).rejects.toBe(reason);
    expect(limiter.inFlight(KEY)).toBe(0);
  });

  it('release is idempotent', async () => {
    const { limiter } = setup(2);
    const a = await granted(limiter.acquire(KEY, 1_000));
    await granted(limiter.acquire(KEY, 1_000));
    a();
    a();
    a();
    expect(limiter.inFlight(KEY)).toBe(1);
  });

  it('keeps keys apart and forgets idle keys', async () => {
    const { limiter } = setup(1);
    const a = await granted(limiter.acquire(KEY, 1_000));
    const b = await granted(limiter.acquire('https://other.example.com', 1_000));
    a();
    b();
    expect(limiter.inFlight(KEY)).toBe(0);
    expect((await limiter.acquire(KEY, 1_000)).ok).toBe(true);
  });
});

describe('ConcurrencyLimiter properties', () => {
  type Action =
    | { t: 'acquire'; maxWait: number; abortable: boolean }
    | { t: 'release'; pick: number }
    | { t: 'abort'; pick: number }
    | { t: 'advance'; ms: number };
  const action: fc.Arbitrary<Action> = fc.oneof(
    fc.record({
      t: fc.constant('acquire' as const),
      maxWait: fc.oneof(fc.integer({ min: 0, max: 3_000 }), fc.constant(Number.POSITIVE_INFINITY)),
      abortable: fc.boolean(),
    }),
    fc.record({ t: fc.constant('release' as const), pick: fc.nat() }),
    fc.record({ t: fc.constant('abort' as const), pick: fc.nat() }),
    fc.record({ t: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 2_000 }) }),
  );
  const options = fc.record({
    max: fc.integer({ min: 1, max: 4 }),
    queue: fc.integer({ min: 0, max: 6 }),
    queueTimeout: fc.oneof(
      fc.integer({ min: 0, max: 2_500 }),
      fc.constant(Number.POSITIVE_INFINITY),
    ),
  });

  it('never more than max in flight, never more than queue waiting, slots granted in arrival order', async () => {
    await fc.assert(
      fc.asyncProperty(
        options,
        fc.array(action, { maxLength: 120, size: 'max' }),
        async (opts, actions) => {
          const { limiter, clock } = setup(opts);
          type Waiting = { seq: number; controller: AbortController | undefined; settled: boolean };
          const waiting: Waiting[] = [];
          let holders: Array<() => void> = [];
          const grants: number[] = [];
          let seq = 0;
          const check = async () => {
            await flush();
            const open = waiting.filter((w) => !w.settled);
            if (limiter.inFlight(KEY) > opts.max)
              throw new Error(`${limiter.inFlight(KEY)} in flight > ${opts.max}`);
            if (limiter.inFlight(KEY) !== holders.length)
              throw new Error('in-flight count drifted');
            if (limiter.queued(KEY) !== open.length) throw new Error('queue length drifted');
            if (open.length > opts.queue) throw new Error(`${open.length} waiting > ${opts.queue}`);
            // A waiter may only be granted while a slot is free if nobody is ahead of it.
            if (open.length > 0 && holders.length < opts.max)
              throw new Error('a slot is free while requests wait');
          };
          for (const a of actions) {
            if (a.t === 'acquire') {
              const controller = a.abortable ? new AbortController() : undefined;
              const w: Waiting = { seq: seq++, controller, settled: false };
              waiting.push(w);
              limiter.acquire(KEY, a.maxWait, controller?.signal).then(
                (d) => {
                  w.settled = true;
                  if (d.ok) {
                    grants.push(w.seq);
                    holders.push(d.release);
                  }
                },
                () => {
                  w.settled = true;
                },
              );
            } else if (a.t === 'release' && holders.length > 0) {
              const i = a.pick % holders.length;
              const release = holders[i]!;
              holders = holders.filter((_, j) => j !== i);
              release();
              release(); // idempotent
            } else if (a.t === 'abort') {
              const open = waiting.filter((w) => !w.settled && w.controller);
              if (open.length > 0)
                open[a.pick % open.length]!.controller!.abort(new Error('abort'));
            } else if (a.t === 'advance') {
              await clock.advance(a.ms);
            }
            await check();
          }
          const sorted = [...grants].sort((x, y) => x - y);
          expect(grants).toEqual(sorted);
        },
      ),
      { numRuns: 200 },
    );
  });
});
