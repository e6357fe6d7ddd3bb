/**
 * Limits shared by the core and the adapters, each defined once.
 */

/**
 * The longest delay a timer can hold: `setTimeout` fires at once for more
 * than 2³¹ − 1 ms (Node, browsers), so no duration option may exceed it.
 */
export const MAX_TIMER_MS = 2_147_483_647;

/**
 * Bytes of a response body that will not be handed back (a failed attempt,
 * a redirect) read to completion so its keep-alive connection can be reused;
 * a longer one is cancelled instead (the connection is then closed).
 */
export const DRAIN_LIMIT: number = 64 * 1024;
