/**
 * What the live runner and its child server say to each other over IPC.
 * Kept apart from ./server.ts, which starts a server when it is loaded.
 */
import type { ServerOptions } from '../server-model.js';

/** Messages from the parent. */
export type ToServer =
  | { type: 'phase'; server: ServerOptions; seed: number; t0: number }
  | { type: 'stats' }
  | { type: 'stop' };

/** Messages to the parent. */
export type FromServer =
  | { type: 'listening'; port: number }
  | { type: 'ready' }
  | {
      type: 'stats';
      arrivals: number[];
      statuses: number[];
      attempts: number[];
      overflow: number;
      /** ms of service spent (`RunTrace.work`). */
      work: number;
    };

/** The header that carries a logical request's id, so the server can number its attempts. */
export const LAB_ID_HEADER = 'x-lab-id';
