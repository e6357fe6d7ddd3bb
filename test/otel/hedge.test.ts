/**
 * staunch/otel on a hedged request: every attempt a span of its own (the
 * hedge's with `http.request.resend_count` and `staunch.hedge`), the loser's
 * ended as lost and not as an error, the winner named on the request span;
 * each attempt sends its own span's `traceparent`.
 */
import type { ServerResponse } from 'node:http';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterEach, expect, it } from 'vitest';
import { createFetch } from '../../src/index.js';
import { instrument } from '../../src/otel/index.js';
import { fakeClock } from '../helpers/clock.js';
import { httpServer, type TestServer } from '../helpers/server.js';

let server: TestServer | undefined;
const held: ServerResponse[] = [];
let closing: (() => Promise<void>) | undefined;
afterEach(async () => {
  for (const res of held.splice(0)) res.destroy();
  await Promise.all([server?.close(), closing?.()]);
});

it('a hedge is an attempt span with its resend count; the loser is lost, the winner named', async () => {
  server = await httpServer((_req, res, index) => {
    if (index === 0) held.push(res);
    else res.end('fast');
  });
  const spans = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({
    spanProcessors: [new SimpleSpanProcessor(spans)],
  });
  closing = () => tracerProvider.shutdown();
  const otel = instrument({ tracerProvider });
  const clock = fakeClock();
  const fetch = otel.wrap(
    createFetch({ on: otel.on, fetch: otel.transport(), clock, hedge: { delay: 50 } }),
  );
  const pending = fetch(server.url);
  await server.seen(1);
  clock.advance(50);
  expect(await (await pending).text()).toBe('fast');

  const finished = spans.getFinishedSpans();
  const [root] = finished.filter((s) => s.kind === SpanKind.INTERNAL);
  const attempts = finished.filter((s) => s.kind === SpanKind.CLIENT);
  expect(root!.attributes).toMatchObject({
    'staunch.attempts': 2,
    'staunch.hedges': 1,
    'staunch.hedge.won_attempt': 2,
    'http.response.status_code': 200,
  });
  const hedge = attempts.find((s) => s.attributes['staunch.hedge'] === true)!;
  const first = attempts.find((s) => s !== hedge)!;
  expect(attempts).toHaveLength(2);
  expect(hedge.attributes).toMatchObject({
    'http.request.resend_count': 1,
    'http.response.status_code': 200,
  });
  expect(first.attributes['http.request.resend_count']).toBeUndefined();
  expect(first.attributes['staunch.hedge.lost']).toBe(true);
  expect(first.attributes['error.type']).toBeUndefined();
  expect(first.status.code).not.toBe(SpanStatusCode.ERROR);
  // Each attempt carried its own span's traceparent.
  const sent = server.received.map((r) => r.headers.traceparent);
  expect(sent).toEqual(
    [first, hedge].map((s) => `00-${s.spanContext().traceId}-${s.spanContext().spanId}-01`),
  );
});
