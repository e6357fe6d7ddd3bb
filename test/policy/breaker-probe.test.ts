/**
 * Who carries the half-open probe. A probe that fails spends an attempt of
 * the request that carried it: a request on its last attempt that carries
 * one hands its 502 to the caller, though its deadline outlasts the outage.
 * The probe goes to a waiter that can still retry; a request on its last
 * attempt carries one only when no waiter can spare an attempt. Real
 * servers, virtual time.
 */
import { describe, expect, test } from 'vitest';
import type { GiveUpEvent } from '../../src/index.js';
import { client } from '../helpers/harness.js';
import { httpServer } from '../helpers/server.js';
import { closeAfterEach } from '../helpers/teardown.js';

const cleanup = closeAfterEach();

/** Seeded uniform draws in [0, 1) (mulberry32), so that the backoff jitter varies by seed. */
function seeded(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/**
 * `n` GETs, one every `gap` ms, with 10 s deadlines and 3 attempts (the
 * default) against an upstream that answers 502 (a gateway before a dead
 * backend) from `down[0]` to `down[1]` ms after the start, 200 otherwise.
 */
async function outage(seed: number, gap: number, n: number, down: [number, number]) {
  const giveUps: GiveUpEvent[] = [];
  /** Client clock of each request the upstream received, since the start, and its path. */
  const arrivals: { at: number; path: string }[] = [];
  const c = client({
    random: seeded(seed),
    timeout: { total: 10_000 },
    // Two 502s in a row trip it: no request spends its attempts before the circuit opens.
    breaker: { consecutiveFailures: 2 },
    on: { giveUp: (e) => giveUps.push(e) },
  });
  cleanup.defer(c.stop);
  const start = c.clock.now();
  const server = await httpServer((req, res) => {
    const at = c.clock.now() - start;
    arrivals.push({ at, path: req.url ?? '' });
    res.statusCode = at >= down[0] && at < down[1] ? 502 : 200;
    res.end();
  });
  cleanup.add(server);
  const all: Promise<string>[] = [];
  for (let i = 0; i < n; i++) {
    const p = c.fetch(`${server.url}/${i}`).then(
      (r) => String(r.status),
      (e: unknown) => (e as { code?: string }).code ?? String(e),
    );
    all.push(p);
    await c.clock.sleep(gap);
  }
  const results = await Promise.all(all);
  return { results, giveUps, arrivals, server };
}

describe('the probe goes to a waiter that can still retry', () => {
  for (const seed of [1, 2, 3, 4, 5, 6]) {
    test(`a 2 s outage of 502s, 60 GETs at 10/s, seed ${seed}: every request succeeds`, async () => {
      const down: [number, number] = [1_000, 3_000];
      const { results, giveUps, arrivals, server } = await outage(seed, 100, 60, down);
      // Every deadline (10 s) outlasts the outage: nobody is lost to it.
      expect(results).toEqual(Array(60).fill('200'));
      expect(giveUps).toEqual([]);
      // What the server received: the k-th request of a path is that request's attempt k.
      expect(server.received).toHaveLength(arrivals.length);
      const seen = new Map<string, number>();
      const attemptOf = arrivals.map((a) => {
        const k = (seen.get(a.path) ?? 0) + 1;
        seen.set(a.path, k);
        return { ...a, attempt: k };
      });
      // Each request reached it at most 3 times, and exactly once after the outage (its 200).
      expect(Math.max(...seen.values())).toBeLessThanOrEqual(3);
      const after = attemptOf.filter((a) => a.at >= down[1]).map((a) => a.path);
      expect(new Set(after).size).toBe(after.length);
      // No last attempt was sent into the outage: the probes were carried by waiters with
      // an attempt to spare, whom a failed probe cannot lose.
      const lastInOutage = attemptOf.filter(
        (a) => a.at >= down[0] && a.at < down[1] && a.attempt === 3,
      );
      expect(lastInOutage).toEqual([]);
      // Probes did go during the outage (the circuit was probed, not left alone).
      const inOutage = attemptOf.filter((a) => a.at >= down[0] && a.at < down[1]);
      expect(inOutage.length).toBeGreaterThan(2 + 2_000 / 250);
    });
  }
});
