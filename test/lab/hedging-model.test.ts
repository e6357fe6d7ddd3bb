import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../src/lab/random.js';
import { ServerModel, type ServerOptions } from '../../src/lab/server-model.js';
import { type Schedule, SharedService } from '../../src/lab/sharing.js';

const base: ServerOptions = {
  capacity: 100_000,
  burst: 100_000,
  serviceTime: 50,
  queue: 0,
  retryAfter: 'none',
  rejectCost: 0,
  outages: [],
  failureRate: 0,
};

describe('the latency tail', () => {
  it('makes tailRate of the responses tailFactor × the service time, by the seed', () => {
    const draw = (seed: number) => {
      const s = new ServerModel(
        { ...base, tailRate: 0.05, tailFactor: 20 },
        seededRandom(seed, 'server'),
      );
      return Array.from({ length: 20_000 }, (_, i) => s.arrive(i));
    };
    const verdicts = draw(1);
    const delays = new Set(verdicts.map((v) => v.delay));
    expect([...delays].sort((a, b) => a - b)).toEqual([50, 1000]);
    const slow = verdicts.filter((v) => v.delay === 1000).length / verdicts.length;
    expect(slow).toBeGreaterThan(0.045);
    expect(slow).toBeLessThan(0.055);
    // The demand is the work, the tail's included.
    expect(verdicts.every((v) => v.work === v.delay && v.status === 200)).toBe(true);
    // Seeded: the same seed draws the same slow responses, another seed others.
    expect(draw(1).map((v) => v.delay)).toEqual(verdicts.map((v) => v.delay));
    expect(draw(2).map((v) => v.delay)).not.toEqual(verdicts.map((v) => v.delay));
  });

  it('draws nothing without a tail: the server stream of the storm scenarios is unchanged', () => {
    let draws = 0;
    const counting = () => {
      draws++;
      return 0.5;
    };
    const s = new ServerModel(base, counting);
    for (let i = 0; i < 10; i++) expect(s.arrive(i)).toEqual({ status: 200, delay: 50, work: 50 });
    expect(draws).toBe(0);
  });

  it('with cores, answers at the start of service and leaves the rest to the sharing', () => {
    const s = new ServerModel({ ...base, cores: 2 }, () => 0.5);
    expect(s.arrive(0)).toEqual({ status: 200, delay: 0, work: 50 });
  });
});

/** A SharedService on a hand-run event list: what the simulator's clock does. */
function harness(cores: number) {
  const timers: { t: number; fn: () => void; seq: number }[] = [];
  let seq = 0;
  const schedule: Schedule = (t, fn) => {
    timers.push({ t, fn, seq: seq++ });
  };
  const service = new SharedService(cores, schedule);
  const done: Record<string, number> = {};
  let now = 0;
  /** Runs every timer due up to `until`, in time order. */
  const run = (until = Number.POSITIVE_INFINITY) => {
    for (;;) {
      timers.sort((a, b) => a.t - b.t || a.seq - b.seq);
      const next = timers[0];
      if (next === undefined || next.t > until) break;
      timers.shift();
      now = next.t;
      next.fn();
    }
    if (Number.isFinite(until)) now = until;
  };
  const enter = (name: string, demand: number) =>
    service.enter(now, demand, () => {
      done[name] = now;
    });
  return { service, done, run, enter, at: () => now };
}

describe('the upstream that slows under load (processor sharing)', () => {
  it('serves up to `cores` requests at full speed', () => {
    const h = harness(2);
    h.enter('a', 50);
    h.enter('b', 50);
    h.run();
    expect(h.done).toEqual({ a: 50, b: 50 });
    expect(h.service.work).toBe(100);
  });

  it('slows every request in proportion past `cores`', () => {
    const h = harness(2);
    for (const name of ['a', 'b', 'c', 'd']) h.enter(name, 50);
    h.run();
    // Four requests on two cores: each at half speed, 100 ms for 50 ms of work.
    expect(h.done).toEqual({ a: 100, b: 100, c: 100, d: 100 });
    expect(h.service.work).toBeCloseTo(200, 9);
  });

  it('speeds the others up when one is done or leaves', () => {
    const h = harness(1);
    h.enter('short', 10);
    h.enter('long', 50);
    h.run(15);
    // Two on one core: short gets half a core, done at 20 ms; long has had 10 ms of work.
    expect(h.done).toEqual({});
    h.run();
    expect(h.done.short).toBe(20);
    // Then long alone, at full speed: its 40 ms left take 40 ms.
    expect(h.done.long).toBeCloseTo(60, 9);
  });

  it('stops the work of a request that leaves (the server saw the abort)', () => {
    const h = harness(1);
    const a = h.enter('a', 100);
    h.enter('b', 100);
    h.run(40);
    h.service.leave(a, h.at());
    h.run();
    // a had 20 ms of work at half speed, then left; b had 20 ms, then 80 alone.
    expect(h.done).toEqual({ b: 120 });
    expect(h.service.work).toBeCloseTo(120, 9);
    // Leaving after the work is done changes nothing.
    const before = h.service.work;
    h.service.leave(a, h.at());
    expect(h.service.work).toBe(before);
    expect(h.service.inService).toBe(0);
  });

  it('grows the service time with the requests in service', () => {
    // Requests arriving every 5 ms with 50 ms of work on 4 cores: 10 in service at once at
    // steady state, 2.5 × the service time; the same on 20 cores: each its own 50 ms.
    const latency = (cores: number) => {
      const h = harness(cores);
      const entered: Record<string, number> = {};
      for (let i = 0; i < 200; i++) {
        h.run(i * 5);
        entered[i] = h.at();
        h.enter(String(i), 50);
      }
      h.run();
      return Object.keys(entered).map((i) => h.done[i]! - entered[i]!);
    };
    expect(Math.max(...latency(20))).toBe(50);
    const crowded = latency(4);
    expect(Math.max(...crowded)).toBeGreaterThan(100);
  });
});
