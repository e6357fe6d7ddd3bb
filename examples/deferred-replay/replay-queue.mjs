/**
 * Deferred replay with BullMQ: requests that staunch gave up on (budget spent,
 * circuit open, deadline…) are queued as plain JSON and sent again later by a
 * worker, with the same idempotency key, so the upstream processes each at
 * most once however many times it is sent.
 *
 * Nothing here imports staunch: the producer side is a `giveUp` listener, the
 * worker takes any fetch (staunch's createFetch in main.mjs).
 */
import { UnrecoverableError, Worker } from 'bullmq';

/** The BullMQ queue name used by default. */
export const QUEUE_NAME = 'staunch-replay';

/** BullMQ job ids may not contain ':'; one job per idempotency key (a second give-up is a no-op). */
export function jobIdFor(replay) {
  return replay.idempotencyKey === undefined
    ? undefined
    : `replay-${encodeURIComponent(replay.idempotencyKey).replaceAll(':', '%3A')}`;
}

/**
 * A `giveUp` listener that queues the request for later. Only events that
 * carry `replay` are queued: staunch attaches it to replayable requests
 * (idempotent method or idempotency key) whose body it could keep. Secret
 * headers are already left out.
 */
export function deferGiveUps(queue, { onError = (error) => console.error(error) } = {}) {
  return (event) => {
    const replay = event.replay;
    if (replay === undefined) return;
    const jobId = jobIdFor(replay);
    queue
      .add('replay', replay, {
        ...(jobId !== undefined && { jobId }),
        attempts: 8,
        backoff: { type: 'exponential', delay: 1_000 },
        removeOnComplete: 1_000,
        removeOnFail: 1_000,
      })
      .catch(onError);
  };
}

/** The fetch arguments of a queued replay, with the worker's own credential headers added. */
export function toFetchArgs(replay, credentials = []) {
  const headers = new Headers(replay.headers);
  for (const [name, value] of credentials) headers.set(name, value);
  let body;
  if (replay.body !== undefined) {
    body = replay.bodyEncoding === 'base64' ? Buffer.from(replay.body, 'base64') : replay.body;
  }
  return [replay.url, { method: replay.method, headers, ...(body !== undefined && { body }) }];
}

/** Statuses worth trying again later; any other non-2xx is final. */
const TRANSIENT = new Set([408, 425, 429, 500, 502, 503, 504, 529]);

/**
 * A BullMQ worker that replays queued requests. A 2xx completes the job; a
 * transient failure throws (BullMQ retries with the job's backoff); any other
 * status fails the job for good.
 */
export function replayWorker({
  connection,
  fetch,
  credentials = () => [],
  queueName = QUEUE_NAME,
  concurrency = 4,
}) {
  return new Worker(
    queueName,
    async (job) => {
      const [url, init] = toFetchArgs(job.data, await credentials());
      const response = await fetch(url, init);
      await response.arrayBuffer();
      const what = `${job.data.method} replay ${job.id} answered ${response.status}`;
      if (response.ok) return { status: response.status };
      if (TRANSIENT.has(response.status)) throw new Error(what);
      throw new UnrecoverableError(what);
    },
    { connection, concurrency },
  );
}
