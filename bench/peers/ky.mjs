// ky 1 with its documented retry defaults (limit raised to the lab's attempt cap):
// GET retried on 408 413 429 500 502 503 504, delay 0.3 s × 2^(n−1) with no jitter,
// Retry-After honoured on 413 429 503. The total deadline is an AbortSignal.
import ky from 'ky';

/** @type {import('../../dist/lab/index.js').LiveClient} */
export default {
  name: 'ky',
  description: 'ky: retry { limit: attempts − 1 }, defaults otherwise (0.3 s × 2ⁿ, Retry-After)',
  create({ attempts, deadline }) {
    const client = ky.create({ retry: { limit: attempts - 1 }, timeout: false });
    return async (url, headers, signal) => {
      try {
        const res = await client.get(url, {
          headers,
          signal: AbortSignal.any([signal, AbortSignal.timeout(deadline)]),
        });
        await res.arrayBuffer();
        return { status: res.status };
      } catch (error) {
        if (error?.response) return { status: error.response.status };
        throw error;
      }
    };
  },
};
