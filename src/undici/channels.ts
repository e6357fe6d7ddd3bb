/**
 * `diagnostics_channel` channels fed by the executor's listeners: each
 * carries the very payload the event listener receives (method, redacted
 * URL, never a header or a body).
 */
import { channel } from 'node:diagnostics_channel';
import {
  type AttemptStartEvent,
  type BreakerStateChangeEvent,
  emit,
  type GiveUpEvent,
  type RetryEvent,
  type StaunchListeners,
} from '../events.js';

/** The names of staunch's diagnostics channels. */
export const CHANNELS: Readonly<{
  attemptStart: 'staunch:attempt:start';
  retry: 'staunch:retry';
  giveUp: 'staunch:giveup';
  breaker: 'staunch:breaker';
}> = Object.freeze({
  attemptStart: 'staunch:attempt:start',
  retry: 'staunch:retry',
  giveUp: 'staunch:giveup',
  breaker: 'staunch:breaker',
} as const);

const attemptStart = channel(CHANNELS.attemptStart);
const retry = channel(CHANNELS.retry);
const giveUp = channel(CHANNELS.giveUp);
const breaker = channel(CHANNELS.breaker);

function publisher<E>(
  target: ReturnType<typeof channel>,
  user: ((event: E) => void) | undefined,
): (event: E) => void {
  if (user === undefined) {
    return (event) => {
      if (target.hasSubscribers) target.publish(event);
    };
  }
  return (event) => {
    emit(user, event);
    if (target.hasSubscribers) target.publish(event);
  };
}

/**
 * The user's listeners combined with the channels. With `live`, a listener
 * that only feeds a channel is a getter that reads `undefined` while the
 * channel has no subscriber, so the executor does not even build the event;
 * without `live` (for the core `createFetch`, which copies its listeners
 * once), every channel listener is always present.
 */
export function withChannels(on: StaunchListeners, live: boolean): StaunchListeners {
  const listeners: StaunchListeners = { ...on };
  const wire = <K extends 'attemptStart' | 'retry' | 'giveUp' | 'breakerStateChange', E>(
    key: K,
    target: ReturnType<typeof channel>,
  ): void => {
    const user = on[key] as ((event: E) => void) | undefined;
    const both = publisher<E>(target, user);
    if (!live || user !== undefined) {
      (listeners as Record<string, unknown>)[key] = both;
      return;
    }
    Object.defineProperty(listeners, key, {
      enumerable: true,
      get: () => (target.hasSubscribers ? both : undefined),
    });
  };
  wire<'attemptStart', AttemptStartEvent>('attemptStart', attemptStart);
  wire<'retry', RetryEvent>('retry', retry);
  wire<'giveUp', GiveUpEvent>('giveUp', giveUp);
  wire<'breakerStateChange', BreakerStateChangeEvent>('breakerStateChange', breaker);
  return listeners;
}
