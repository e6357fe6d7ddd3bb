/**
 * staunch/otel: OpenTelemetry spans and metrics from staunch's events. One
 * span per logical request, a child span per attempt (HTTP client semantic
 * conventions), `traceparent` on every attempt, span events for retries,
 * waits and give-ups, and metrics by reason. See docs/otel.md.
 */

export type { Instrumentation, InstrumentOptions } from './instrument.js';
export { instrument } from './instrument.js';
