/**
 * staunch/deadline: the server's side of `deadlineHeader`. `deadlineSignal`
 * turns the time left a caller sent into an `AbortSignal`, for Node's
 * `http` server and any Fetch-style handler. Portable: no `node:`, no package.
 */
export type {
  DeadlineSignalOptions,
  DeadlineSource,
  HeaderRecord,
  HeadersReader,
  RequestDeadline,
  ResponseLike,
} from './signal.js';
export { deadlineSignal } from './signal.js';
