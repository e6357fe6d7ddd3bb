// undici 7's RetryAgent with its documented defaults (maxRetries raised to the lab's cap):
// minTimeout 500 ms, timeoutFactor 2, maxTimeout 30 s, no jitter, Retry-After honoured,
// statusCodes 429 500 502 503 504, idempotent methods.
import { Agent, RetryAgent, request } from 'undici';

/** @type {import('../../dist/lab/index.js').LiveClient} */
export default {
  name: 'undici-retry',
  description:
    'undici RetryAgent: { maxRetries: attempts − 1 }, defaults otherwise (0.5 s × 2ⁿ, Retry-After)',
  create({ attempts, deadline }) {
    const dispatcher = new RetryAgent(new Agent(), { maxRetries: attempts - 1 });
    return async (url, headers, signal) => {
      try {
        const res = await request(url, {
          dispatcher,
          headers,
          signal: AbortSignal.any([signal, AbortSignal.timeout(deadline)]),
        });
        await res.body.dump();
        return { status: res.statusCode };
      } catch (error) {
        if (typeof error?.statusCode === 'number') return { status: error.statusCode };
        throw error;
      }
    };
  },
};
