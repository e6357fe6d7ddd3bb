// The usual p-retry 7 loop around fetch, with p-retry's documented defaults: factor 2,
// minTimeout 1 s, no randomisation; a 429 or 5xx is thrown to make it retry.
import pRetry from 'p-retry';

class StatusError extends Error {
  constructor(status) {
    super(`status ${status}`);
    this.status = status;
  }
}

/** @type {import('../../dist/lab/index.js').LiveClient} */
export default {
  name: 'p-retry',
  description:
    'p-retry around fetch: { retries: attempts − 1 } (1 s × 2ⁿ, no jitter, no Retry-After)',
  create({ attempts, deadline }) {
    return async (url, headers, signal) => {
      const total = AbortSignal.any([signal, AbortSignal.timeout(deadline)]);
      try {
        const status = await pRetry(
          async () => {
            const res = await fetch(url, { headers, signal: total });
            await res.arrayBuffer();
            if (res.status === 429 || res.status >= 500) throw new StatusError(res.status);
            return res.status;
          },
          { retries: attempts - 1, signal: total },
        );
        return { status };
      } catch (error) {
        if (error instanceof StatusError) return { status: error.status };
        throw error;
      }
    };
  },
};
