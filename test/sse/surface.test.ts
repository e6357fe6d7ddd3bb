/**
 * The public surface of staunch/sse: what a user calls to read, retry,
 * resume and relay event streams. A name added or removed here is a decision
 * (docs/sse.md documents each).
 */
import { expect, test } from 'vitest';
import * as sse from '../../src/sse/index.js';

test('staunch/sse exports', () => {
  expect(Object.keys(sse).sort()).toEqual(
    [
      'EVENT_STREAM_HEADERS',
      'EventStreamError',
      'EventStreamParser',
      'EventWriter',
      'FIRST_EVENT_HEADER',
      'disconnectSignal',
      'firstEvent',
      'formatEvent',
      'pipeEvents',
      'providerErrorStatus',
      'readEvents',
      'resumableEvents',
      'toEventStream',
    ].sort(),
  );
  expect(new sse.EventStreamError('x', 'interrupted').code).toBe('STAUNCH_EVENT_STREAM');
});
