/**
 * Links a caller's signal to the controllers of its attempts, by hand.
 *
 * `AbortSignal.any` leaks on Node 20 when one parent signal outlives many
 * requests, and adding one listener per request to a long-lived parent makes
 * each `addEventListener` slower (Node checks for duplicates along the list).
 * So each parent carries at most one listener, shared by a set of children;
 * the listener is removed as soon as the set is empty.
 */

import type { Clock } from './clock.js';
import { AbortToken } from './token.js';

interface Group {
  readonly children: Set<(reason: unknown) => void>;
  readonly onAbort: () => void;
}

const groups = new WeakMap<AbortSignal, Group>();

/**
 * Calls `child(parent.reason)` when `parent` aborts. Returns the function that
 * undoes the link (idempotent). `parent` must not be aborted yet.
 */
export function linkSignal(parent: AbortSignal, child: (reason: unknown) => void): () => void {
  if (parent instanceof AbortToken) return parent.link(child);
  let group = groups.get(parent);
  if (group === undefined) {
    const children = new Set<(reason: unknown) => void>();
    const onAbort = (): void => {
      groups.delete(parent);
      for (const abort of children) abort(parent.reason);
      children.clear();
    };
    group = { children, onAbort };
    groups.set(parent, group);
    parent.addEventListener('abort', onAbort, { once: true });
  }
  const { children, onAbort } = group;
  children.add(child);
  return () => {
    if (children.delete(child) && children.size === 0 && groups.get(parent) === group) {
      groups.delete(parent);
      parent.removeEventListener('abort', onAbort);
    }
  };
}

/**
 * `clock.sleep(ms)` that the caller's `signal` ends with its reason, through
 * the shared link above (one listener on `signal` however many requests
 * sleep under it). A signal aborted already rejects at once: a link to it
 * would never fire.
 */
export async function sleepUnder(
  clock: Clock,
  ms: number,
  signal: AbortSignal | undefined,
): Promise<void> {
  if (signal === undefined) return clock.sleep(ms);
  signal.throwIfAborted();
  const controller = new AbortController();
  const unlink = linkSignal(signal, (why) => controller.abort(why));
  try {
    await clock.sleep(ms, controller.signal);
  } finally {
    unlink();
  }
}
