import type { FastifyInstance } from 'fastify';
import type { PipeEventsResult } from '../../src/sse/index.js';
export function createApp(options: {
  upstream: string;
  fetch?: (input: string, init: RequestInit) => Promise<Response>;
  onRelayEnd?: (result: PipeEventsResult) => void;
}): FastifyInstance;
