// Types of replay-queue.mjs (self-contained: ReplayRequest as staunch defines it).
import type { ConnectionOptions, Queue, Worker } from 'bullmq';

/** A request as staunch's `giveUp` event describes it for a later replay (plain JSON). */
export interface ReplayRequest {
  method: string;
  url: string;
  headers: [string, string][];
  body?: string;
  bodyEncoding?: 'utf8' | 'base64';
  idempotencyKey?: string;
}

type Credentials = Iterable<readonly [string, string]>;

export declare const QUEUE_NAME: string;
export declare function jobIdFor(replay: ReplayRequest): string | undefined;
export declare function deferGiveUps(
  queue: Queue,
  options?: { onError?: (error: unknown) => void },
): (event: { readonly replay?: ReplayRequest | undefined }) => void;
export declare function toFetchArgs(
  replay: ReplayRequest,
  credentials?: Credentials,
): [string, RequestInit];
export declare function replayWorker(options: {
  connection: ConnectionOptions;
  fetch: (url: string, init: RequestInit) => Promise<Response>;
  credentials?: () => Credentials | Promise<Credentials>;
  queueName?: string;
  concurrency?: number;
}): Worker<ReplayRequest, { status: number }>;
