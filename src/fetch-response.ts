/**
 * What the fetch adapter does with a response's body that is not its
 * caller's to read: a failed attempt's body drained (so its connection is
 * reused) or cancelled, and the caller's signal kept linked to a handed-back
 * body for as long as that body lives.
 */
import { noop } from './internal/clock.js';
import { DRAIN_LIMIT } from './internal/limits.js';

/**
 * Releases a failed response before the next attempt: reads up to
 * `DRAIN_LIMIT` bytes so the keep-alive connection can be reused, cancels past
 * that, and cancels whatever is left when `stop` settles (the backoff is over).
 */
export async function discardResponse(response: Response, stop: Promise<unknown>): Promise<void> {
  const body = response.body;
  if (body === null || body.locked) return;
  const length = Number(response.headers.get('content-length'));
  if (length > DRAIN_LIMIT) {
    await body.cancel();
    return;
  }
  const reader = body.getReader();
  let stopped = false;
  const cancel = (): void => {
    if (stopped) return;
    stopped = true;
    reader.cancel().catch(noop);
  };
  stop.then(cancel, cancel);
  let read = 0;
  try {
    while (!stopped) {
      const { done, value } = await reader.read();
      if (done) {
        stopped = true;
        return;
      }
      read += value.byteLength;
      if (read > DRAIN_LIMIT) cancel();
    }
  } catch {
    cancel();
  }
}

/**
 * The caller's signal must still abort the body after the response is handed
 * back, so its link to the attempt stays until the body can no longer be read:
 * at once for a bodiless response, else when the body stream is collected.
 */
const bodyLinks = new FinalizationRegistry<() => void>((unlink) => unlink());

/** Calls `unlink` once `response`'s body can no longer be read (at once when it has none). */
export function keepLinkWhileBodyLives(response: Response, unlink: () => void): void {
  const body = response.body;
  if (body === null) unlink();
  else bodyLinks.register(body, unlink);
}
