/**
 * staunch/sse: read, relay and resume Server-Sent Events streams. No runtime
 * dependency and no `node:` import (the node:http helper is `staunch/sse`'s
 * `pipeEvents`, which only uses the ServerResponse it is given).
 */
export type { EventStreamErrorOptions, EventStreamFailure } from './errors.js';
export { EventStreamError } from './errors.js';
export type { FirstEventOptions } from './first-event.js';
export { FIRST_EVENT_HEADER, firstEvent, providerErrorStatus } from './first-event.js';
export type { EventInput, EventMessage } from './format.js';
export { EventWriter, formatEvent } from './format.js';
export type { EventResponse, PipeEventsOptions, PipeEventsResult } from './node.js';
export { disconnectSignal, pipeEvents } from './node.js';
export type { ServerSentEvent } from './parse.js';
export { EventStreamParser } from './parse.js';
export type { EventReader, EventStreamSource, ReadEventsOptions } from './read.js';
export { readEvents } from './read.js';
export type { ToEventStreamOptions } from './relay.js';
export { EVENT_STREAM_HEADERS, toEventStream } from './relay.js';
export type { ReconnectInfo, ResumableEventsOptions, ResumableReader } from './resume.js';
export { resumableEvents } from './resume.js';
