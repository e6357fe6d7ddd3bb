/**
 * The waiting room's release pace, as pure logic (no sockets: the room only
 * talks to a peek function and a clock): it starts at the pace before the
 * circuit opened, grows by one per second with each released waiter that
 * succeeds, and halves when the circuit opens again during the release.
 */
import { describe, expect, test } from 'vitest';
import { type BreakerPeek, BreakerWaitingRoom } from '../../src/policy/breaker-wait.js';
import { fakeClock } from '../helpers/clock.js';

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
