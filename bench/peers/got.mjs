// got 14 with its documented retry defaults (limit raised to the lab's attempt cap):
// GET retried on 408 413 429 500 502 503 504 521 522 524, delay 1 s × 2^(n−1) + up to
// 100 ms of noise, Retry-After honoured. The total deadline is timeout.request.
import got from 'got';

/** @type {import('../../dist/lab/index.js').LiveClient} */
export default {
  name: 'got',
  description:
    'got: retry { limit: attempts − 1 }, timeout { request: deadline }, defaults otherwise (1 s × 2ⁿ + noise)',
  create({ attempts, deadline }) {
    const client = got.extend({ retry: { limit: attempts - 1 }, timeout: { request: deadline } });
    return async (url, headers, signal) => {
      try {
        const res = await client.get(url, { headers, signal });
        return { status: res.statusCode };
      } catch (error) {
        if (error?.response) return { status: error.response.statusCode };
        throw error;
      }
    };
  },
};
