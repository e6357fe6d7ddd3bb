/**
 * The waiting room's release pace, as pure logic (no sockets: the room only
 * talks to a peek function and a clock): it starts at the pace before the
 * circuit opened, grows by one per second with each released waiter that
 * succeeds, and halves when the circuit opens again during the release.
 */
import { describe, expect, test } from 'vitest';
import { type BreakerPeek, BreakerWaitingRoom } from '../../src/policy/breaker/wait.js';
import { fakeClock, flush } from '../helpers/clock.js';

const KEY = 'https://api.example.com';

/** Moves the clock on in 10 ms steps, so that the room's own sleeps, set as it goes, fire too. */
async function pass(clock: ReturnType<typeof fakeClock>, ms: number): Promise<void> {
  for (let t = 0; t < ms; t += 10) await clock.advance(10);
}

function room(circuit: { ok: boolean }) {
  const clock = fakeClock();
  const peek = (): BreakerPeek =>
    circuit.ok ? { ok: true, retryAfter: 0 } : { ok: false, retryAfter: 10_000 };
  const r = new BreakerWaitingRoom(clock, 250, peek);
  // 10 admissions in the second before the circuit opened: a pace of 10/s.
  for (let i = 0; i < 10; i++) r.admitted(KEY, clock.now() + i * 100);
  return { clock, r };
}

/** `n` waiters; `released` counts those let go, `onGo` runs for each. */
function waiters(r: BreakerWaitingRoom, n: number, onGo: () => void = () => {}) {
  const released = { count: 0 };
  for (let i = 0; i < n; i++) {
    void r.wait(KEY, 60_000).then((go) => {
      if (!go) return;
      released.count++;
      onGo();
    });
  }
  return released;
}

describe('the waiting room releases its backlog', () => {
  test('at the pace before the outage while nothing is reported', async () => {
    const circuit = { ok: false };
    const { clock, r } = room(circuit);
    await pass(clock, 1_000);
    const released = waiters(r, 100);
    await pass(clock, 500);
    expect(released.count).toBe(0);
    circuit.ok = true;
    await pass(clock, 2_000);
    // 10/s for 2 s, and the first one at once.
    expect(released.count).toBeGreaterThanOrEqual(19);
    expect(released.count).toBeLessThanOrEqual(22);
  });

  test('faster while the released requests succeed', async () => {
    const circuit = { ok: false };
    const { clock, r } = room(circuit);
    await pass(clock, 1_000);
    const released = waiters(r, 200, () => r.succeeded(KEY));
    await pass(clock, 500);
    circuit.ok = true;
    await pass(clock, 3_000);
    // 10/s for the first 500 ms (one meter bucket), then each success adds 1/s: about
    // e-fold a second, 5 + 10 × (e^2.5 − 1) ≈ 116 in 3 s, against 31 at the old pace.
    expect(released.count).toBeGreaterThanOrEqual(90);
    expect(released.count).toBeLessThan(140);
  });

  test('by one per second per released waiter at most, however many calls succeed', async () => {
    const circuit = { ok: false };
    const { clock, r } = room(circuit);
    await pass(clock, 1_000);
    // Ten successes reported for every waiter released (other traffic succeeding too).
    const released = waiters(r, 200, () => {
      for (let k = 0; k < 10; k++) r.succeeded(KEY);
    });
    circuit.ok = true;
    await pass(clock, 2_000);
    expect(released.count).toBeLessThanOrEqual(80);
  });

  test('at half the pace after the circuit opened again during the release', async () => {
    const circuit = { ok: false };
    const { clock, r } = room(circuit);
    await pass(clock, 1_000);
    const released = waiters(r, 200);
    circuit.ok = true;
    await pass(clock, 1_000);
    circuit.ok = false;
    await pass(clock, 1_000);
    const before = released.count;
    circuit.ok = true;
    await pass(clock, 2_000);
    // 10/s halved: 5/s, about 10 in 2 s.
    const second = released.count - before;
    expect(second).toBeGreaterThanOrEqual(9);
    expect(second).toBeLessThanOrEqual(12);
  });
});

describe('the room says when it releases a backlog', () => {
  test('releasing: only while the circuit is closed on waiters still in the room', async () => {
    const circuit = { ok: false };
    const { clock, r } = room(circuit);
    await pass(clock, 1_000);
    expect(r.releasing(KEY)).toBe(false);
    const released = waiters(r, 30);
    await pass(clock, 500);
    // Waiting on an open circuit is not a release.
    expect(r.releasing(KEY)).toBe(false);
    circuit.ok = true;
    await pass(clock, 500);
    expect(released.count).toBeGreaterThan(0);
    expect(released.count).toBeLessThan(30);
    expect(r.releasing(KEY)).toBe(true);
    // All out at 10/s: the room is gone, and so is the release.
    await pass(clock, 4_000);
    expect(released.count).toBe(30);
    expect(r.releasing(KEY)).toBe(false);
  });
});

describe('who carries the probe', () => {
  /** A circuit whose probe is due at the first look, then open for 10 s. */
  function probeOnce() {
    const clock = fakeClock();
    let looks = 0;
    const peek = (): BreakerPeek =>
      looks++ === 0 ? { ok: false, retryAfter: 0 } : { ok: false, retryAfter: 10_000 };
    return { clock, r: new BreakerWaitingRoom(clock, 250, peek) };
  }

  test('the first waiter with the most attempts to spare', async () => {
    const { clock, r } = probeOnce();
    const gone: string[] = [];
    const spares: [string, number][] = [
      ['last', 0],
      ['one', 1],
      ['two', 2],
      ['two again', 2],
    ];
    for (const [name, spare] of spares) {
      void r.wait(KEY, 60_000, undefined, spare).then((go) => go && gone.push(name));
    }
    await pass(clock, 100);
    expect(gone).toEqual(['two']);
    expect(r.waiting(KEY)).toBe(3);
  });

  test('one on its last attempt, when nobody can spare one', async () => {
    const { clock, r } = probeOnce();
    const gone: string[] = [];
    void r.wait(KEY, 60_000, undefined, 0).then((go) => go && gone.push('first'));
    void r.wait(KEY, 60_000, undefined, 0).then((go) => go && gone.push('second'));
    await pass(clock, 100);
    expect(gone).toEqual(['first']);
  });

  test('spares: whether a waiter can spare an attempt, those that left not counted', async () => {
    const { clock, r } = probeOnce();
    expect(r.spares(KEY)).toBe(false);
    void r.wait(KEY, 60_000, undefined, 0);
    expect(r.spares(KEY)).toBe(false);
    void r.wait(KEY, 60_000, undefined, 1);
    expect(r.spares(KEY)).toBe(true);
    // The one with a spare attempt went to carry the probe.
    await pass(clock, 100);
    expect(r.spares(KEY)).toBe(false);
  });
});

describe('the room is bounded per key', () => {
  test('past maxWaiting a new waiter is refused at once; one that leaves makes room', async () => {
    const clock = fakeClock();
    const peek = (): BreakerPeek => ({ ok: false, retryAfter: 10_000 });
    const r = new BreakerWaitingRoom(clock, 250, peek, 2);
    const first = new AbortController();
    const aborted = r.wait(KEY, 60_000, first.signal).catch((e: unknown) => e);
    void r.wait(KEY, 60_000);
    expect(r.waiting(KEY)).toBe(2);
    expect(await r.wait(KEY, 60_000)).toBe(false);
    // Another key has its own room.
    void r.wait('https://other.example.com', 60_000);
    expect(r.waiting('https://other.example.com')).toBe(1);
    first.abort(new Error('gone'));
    expect(await aborted).toEqual(new Error('gone'));
    expect(r.waiting(KEY)).toBe(1);
    let third: boolean | undefined;
    void r.wait(KEY, 1_000).then((go) => {
      third = go;
    });
    expect(r.waiting(KEY)).toBe(2);
    // It waited: refused only when its own time ran out.
    await pass(clock, 500);
    expect(third).toBeUndefined();
    await pass(clock, 600);
    expect(third).toBe(false);
  });

  test('maxWaiting 0: nobody waits', async () => {
    const clock = fakeClock();
    const r = new BreakerWaitingRoom(clock, 250, () => ({ ok: false, retryAfter: 10_000 }), 0);
    expect(await r.wait(KEY, 60_000)).toBe(false);
    expect(r.holds(KEY)).toBe(false);
  });
});

describe('each wait ends at its own time, with one timer for the room', () => {
  test('a short wait that joins while the room sleeps ends on time', async () => {
    const clock = fakeClock();
    const r = new BreakerWaitingRoom(clock, 250, () => ({ ok: false, retryAfter: 10_000 }));
    void r.wait(KEY, 60_000);
    await clock.advance(10);
    const start = clock.now();
    let endedAt: number | undefined;
    void r.wait(KEY, 30).then((go) => {
      expect(go).toBe(false);
      endedAt = clock.now();
    });
    for (let t = 0; t < 100 && endedAt === undefined; t++) await clock.advance(1);
    expect(endedAt).toBe(start + 30);
  });

  test('waits that end one by one cost no extra look at the circuit', async () => {
    const clock = fakeClock();
    let looks = 0;
    const r = new BreakerWaitingRoom(clock, 250, () => {
      looks++;
      return { ok: false, retryAfter: 10_000 };
    });
    const ended: number[] = [];
    for (let i = 1; i <= 100; i++) void r.wait(KEY, i).then(() => ended.push(clock.now()));
    const start = clock.now();
    // The room's first look has answered: it sleeps until the first wait ends.
    await flush();
    await pass(clock, 200);
    expect(ended.map((t) => t - start)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    // One look, then one every poll (a quarter of the probe interval: 62.5 ms) while any wait.
    expect(looks).toBeLessThanOrEqual(3);
    expect(r.holds(KEY)).toBe(false);
  });
});
