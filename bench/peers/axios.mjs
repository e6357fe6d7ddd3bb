// axios + axios-retry 4 with its documented exponential recipe: retryDelay
// axiosRetry.exponentialDelay (100 ms × 2ⁿ + 0–20 %, at least Retry-After), the default
// retryCondition (network errors, 429 and 5xx on idempotent methods). Without retryDelay
// axios-retry waits nothing at all (only Retry-After).
import axios from 'axios';
import axiosRetry from 'axios-retry';

/** @type {import('../../dist/lab/index.js').LiveClient} */
export default {
  name: 'axios-retry',
  description: 'axios + axios-retry: { retries: attempts − 1, retryDelay: exponentialDelay }',
  create({ attempts, deadline }) {
    const client = axios.create();
    axiosRetry(client, { retries: attempts - 1, retryDelay: axiosRetry.exponentialDelay });
    return async (url, headers, signal) => {
      try {
        const res = await client.get(url, {
          headers,
          signal: AbortSignal.any([signal, AbortSignal.timeout(deadline)]),
        });
        return { status: res.status };
      } catch (error) {
        if (error?.response) return { status: error.response.status };
        throw error;
      }
    };
  },
};
