import { RateLimiter, type ResolvedRateLimitOptions } from '../../src/policy/rate-limiter.js';
import { memoryStore } from '../../src/store/memory.js';
import { fakeClock } from '../helpers/clock.js';
import { seeded } from './support.js';

/** What the simulated upstream and its clients did over the measured span. */
export interface SimResult {
  attempts: number;
  throttled: number;
  succeeded: number;
  shed: number;
  /** Successes per second over the measured span. */
  goodput: number;
  /** 429s / attempts over the measured span. */
  throttleRatio: number;
}

export interface SimOptions {
  limiter: ResolvedRateLimitOptions | false;
  /** Server quota: a token bucket of this rate and a one-second burst. */
  quota: number;
  /** Open-loop demand: logical requests per second. */
  demand: number;
  seconds: number;
  /** Measure from this second on (after the limiter engaged and settled). */
  warmup: number;
  latency?: number;
  attempts?: number;
  maxWait?: number;
  retryAfter?: number;
  seed?: number;
}

/**
 * Pure-logic simulation on the fake clock: an upstream with a token-bucket
 * quota answering 429 past it, and an open-loop stream of logical requests,
 * each retried after a 429 with jittered backoff.
 */
export async function simulate(o: SimOptions): Promise<SimResult> {
  const clock = fakeClock();
  const random = seeded(o.seed ?? 1);
  const limiter =
    o.limiter === false ? undefined : new RateLimiter(o.limiter, memoryStore(), clock);
  const key = 'https://upstream.test';
  const latency = o.latency ?? 20;
  const start = clock.now();
  const from = start + o.warmup * 1_000;
  const end = start + o.seconds * 1_000;
  let serverTokens = o.quota;
  let serverAt = start;
  const stats = { attempts: 0, throttled: 0, succeeded: 0, shed: 0 };
  const serve = (now: number): number => {
    serverTokens = Math.min(o.quota, serverTokens + ((now - serverAt) * o.quota) / 1_000);
    serverAt = now;
    if (serverTokens >= 1) {
      serverTokens -= 1;
      return 200;
    }
    return 429;
  };
  const measured = (now: number) => now >= from && now < end;

  const logical = async (): Promise<void> => {
    for (let attempt = 1; attempt <= (o.attempts ?? 4); attempt++) {
      if (limiter) {
        const go = await limiter.acquire(key, o.maxWait ?? 2_000);
        if (!go.ok) {
          if (measured(clock.now())) stats.shed++;
          return;
        }
      }
      const sentAt = clock.now();
      const status = serve(sentAt);
      if (measured(sentAt)) {
        stats.attempts++;
        if (status === 429) stats.throttled++;
        else stats.succeeded++;
      }
      await clock.sleep(latency);
      const hint =
        status === 429 && o.retryAfter !== undefined
          ? { retryAfter: o.retryAfter, sentAt }
          : { sentAt };
      await limiter?.onResponse(key, status, hint);
      if (status !== 429) return;
      await clock.sleep(Math.round(random() * 100 * 2 ** attempt));
    }
  };

  const stop = clock.autoAdvance();
  const tasks: Promise<void>[] = [];
  const interval = 1_000 / o.demand;
  for (let t = 0; clock.now() < end; t++) {
    tasks.push(logical());
    await clock.sleep(Math.round(interval * (t + 1)) - Math.round(interval * t));
  }
  await Promise.all(tasks);
  stop();
  const span = (end - from) / 1_000;
  return {
    ...stats,
    goodput: stats.succeeded / span,
    throttleRatio: stats.attempts === 0 ? 0 : stats.throttled / stats.attempts,
  };
}
