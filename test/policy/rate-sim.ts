import { RateLimiter, type ResolvedRateLimitOptions } from '../../src/policy/rate/limiter.js';
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
  /** Server quota, requests per second. */
  quota: number;
  /**
   * `'bucket'`: a token bucket of `burst` tokens (default: one second's
   * worth); `'window'`: `quota` requests per fixed one-second window;
   * `'random'`: no quota, `refuse` of the requests refused at random.
   * @default 'bucket'
   */
  upstream?: 'bucket' | 'window' | 'random';
  burst?: number;
  /** `'random'`: the share refused. */
  refuse?: number;
  /** Open-loop demand: logical requests per second (over all processes). */
  demand: number;
  seconds: number;
  /** Measure from this second on (after the limiter engaged and settled). */
  warmup: number;
  /** Processes (each its own limiter), round robin over the demand. @default 1 */
  processes?: number;
  /** Whether the processes share one store (a fleet on Redis) or each has its own. */
  shared?: boolean;
  latency?: number;
  attempts?: number;
  maxWait?: number;
  retryAfter?: number;
  seed?: number;
  /** Count every attempt from `warmup` on, also after `seconds` (the retries of the last arrivals). */
  tail?: boolean;
}

function upstream(o: SimOptions, start: number, random: () => number) {
  const kind = o.upstream ?? 'bucket';
  const burst = o.burst ?? o.quota;
  let tokens = burst;
  let at = start;
  let window = -1;
  let used = 0;
  return (now: number): number => {
    if (kind === 'random') return random() < (o.refuse ?? 0) ? 429 : 200;
    if (kind === 'window') {
      const w = Math.floor((now - start) / 1_000);
      if (w !== window) {
        window = w;
        used = 0;
      }
      return ++used <= o.quota ? 200 : 429;
    }
    tokens = Math.min(burst, tokens + ((now - at) * o.quota) / 1_000);
    at = now;
    if (tokens >= 1) {
      tokens -= 1;
      return 200;
    }
    return 429;
  };
}

/**
 * Pure-logic simulation on the fake clock: an upstream with a quota
 * answering 429 past it (or refusing at random), and an open-loop stream of
 * logical requests spread over P processes, each retried after a 429 with
 * jittered backoff.
 */
export async function simulate(o: SimOptions): Promise<SimResult> {
  const clock = fakeClock();
  const random = seeded(o.seed ?? 1);
  const processes = o.processes ?? 1;
  const store = memoryStore();
  const limiters = Array.from({ length: processes }, () =>
    o.limiter === false
      ? undefined
      : new RateLimiter(o.limiter, o.shared === true ? store : memoryStore(), clock),
  );
  const key = 'https://upstream.test';
  const latency = o.latency ?? 20;
  const start = clock.now();
  const from = start + o.warmup * 1_000;
  const end = start + o.seconds * 1_000;
  const serve = upstream(o, start, random);
  const stats = { attempts: 0, throttled: 0, succeeded: 0, shed: 0 };
  const measured = (now: number) => now >= from && (o.tail === true || now < end);

  const logical = async (limiter: RateLimiter | undefined): Promise<void> => {
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
      await clock.sleep(Math.max(o.retryAfter ?? 0, Math.round(random() * 100 * 2 ** attempt)));
    }
  };

  const stop = clock.autoAdvance();
  const tasks: Promise<void>[] = [];
  const interval = 1_000 / o.demand;
  for (let t = 0; clock.now() < end; t++) {
    tasks.push(logical(limiters[t % processes]));
    await clock.sleep(Math.round(interval * (t + 1)) - Math.round(interval * t));
  }
  await Promise.all(tasks);
  stop();
  const span = ((o.tail === true ? clock.now() : end) - from) / 1_000;
  return {
    ...stats,
    goodput: stats.succeeded / span,
    throttleRatio: stats.attempts === 0 ? 0 : stats.throttled / stats.attempts,
  };
}
