/**
 * staunch/otel against real servers: span names, attributes and parent links
 * read from the SDK's in-memory span exporter, `traceparent` as the server
 * received it, and metrics from the in-memory metric exporter.
 */
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import {
  AggregationTemporality,
  DataPointType,
  InMemoryMetricExporter,
  MeterProvider,
  type MetricData,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { Agent, request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { constantBackoff, createFetch, memoryStore } from '../../src/index.js';
import { instrument } from '../../src/otel/index.js';
import { retryInterceptor } from '../../src/undici/index.js';
import { fakeClock } from '../helpers/clock.js';
import { scriptServer, type TestServer, trackedFetch } from '../helpers/server.js';

const servers: TestServer[] = [];
const closers: (() => Promise<unknown>)[] = [];
const stops: (() => void)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) stop();
  await Promise.all([
    ...servers.splice(0).map((s) => s.close()),
    ...closers.splice(0).map((c) => c()),
  ]);
});

function telemetry() {
  const spans = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({
    spanProcessors: [new SimpleSpanProcessor(spans)],
  });
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
  const meterProvider = new MeterProvider({ readers: [reader] });
  closers.push(
    () => meterProvider.shutdown(),
    () => tracerProvider.shutdown(),
  );
  const metric = async (name: string): Promise<MetricData | undefined> => {
    exporter.reset();
    await reader.forceFlush();
    const all = exporter.getMetrics().flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics));
    return all.find((m) => m.descriptor.name === name);
  };
  return { spans, providers: { tracerProvider, meterProvider }, metric };
}

/** Answers 503 to the first `failures` requests, 200 after. */
async function flaky(failures: number): Promise<TestServer> {
  const headers = { 'content-type': 'text/plain' };
  const server = await scriptServer({
    script: Array(failures).fill({ status: 503, headers, body: 'busy' }),
    after: { headers, body: 'ok' },
  });
  servers.push(server);
  return server;
}

const parentOf = (s: ReadableSpan): string | undefined => s.parentSpanContext?.spanId;
const traceparentOf = (s: ReadableSpan): string =>
  `00-${s.spanContext().traceId}-${s.spanContext().spanId}-01`;

/**
 * A client traced by `otel`, backing off 7 ms on a test clock that moves only
 * while no attempt is in flight (so a wait lasts exactly what was scheduled),
 * without a rate limiter.
 */
function tracedFetch(otel: ReturnType<typeof instrument>) {
  const clock = fakeClock();
  // transport() takes a URL string, as staunch calls it; trackedFetch wraps any fetch.
  const tracked = trackedFetch(otel.transport() as typeof fetch);
  stops.push(clock.autoAdvance(tracked.idle));
  return otel.wrap(
    createFetch({
      on: otel.on,
      fetch: tracked.fetch,
      clock,
      retry: { backoff: constantBackoff(7) },
      rateLimit: false,
    }),
  );
}

describe('staunch/otel with createFetch', () => {
  it('a replayed response (Idempotent-Replayed: true) marks its attempt span and the request span', async () => {
    const t = telemetry();
    const server = await scriptServer({
      script: [{ status: 503 }],
      after: { status: 201, headers: { 'idempotent-replayed': 'true' }, body: 'charge 1' },
    });
    servers.push(server);
    const fetch = tracedFetch(instrument(t.providers));
    const res = await fetch(server.url, { method: 'POST', body: '{}', idempotencyKey: 'k-1' });
    expect(await res.text()).toBe('charge 1');
    expect(server.received.map((r) => r.headers['idempotency-key'])).toEqual(['k-1', 'k-1']);
    const spans = t.spans.getFinishedSpans();
    const [root] = spans.filter((s) => s.kind === SpanKind.INTERNAL);
    const attempts = spans.filter((s) => s.kind === SpanKind.CLIENT);
    expect(root!.attributes['staunch.idempotent_replayed']).toBe(true);
    const marks = attempts.map((s) => s.attributes['staunch.idempotent_replayed']);
    expect(marks).toEqual([undefined, true]);
  });

  it('one span per logical request, a child per attempt, traceparent from the attempt', async () => {
    const t = telemetry();
    const server = await flaky(1);
    const fetch = tracedFetch(instrument(t.providers));
    const res = await fetch(`${server.url}/items?api_key=s3cret&page=2`);
    expect(await res.text()).toBe('ok');

    const spans = t.spans.getFinishedSpans();
    const logical = spans.filter((s) => s.kind === SpanKind.INTERNAL);
    const attempts = spans.filter((s) => s.kind === SpanKind.CLIENT);
    expect(logical).toHaveLength(1);
    expect(attempts).toHaveLength(2);
    const root = logical[0]!;
    expect(root.name).toBe('staunch GET');
    expect(root.attributes['url.full']).toBe(`${server.url}/items?api_key=***&page=2`);
    expect(root.attributes['http.response.status_code']).toBe(200);
    expect(root.attributes['staunch.attempts']).toBe(2);
    expect(root.attributes['http.request.resend_count']).toBe(1);
    expect(root.status.code).not.toBe(SpanStatusCode.ERROR);
    const [first, second] = attempts;
    for (const a of attempts) {
      expect(a.name).toBe('GET');
      expect(parentOf(a)).toBe(root.spanContext().spanId);
      expect(a.spanContext().traceId).toBe(root.spanContext().traceId);
      expect(a.attributes).toMatchObject({
        'http.request.method': 'GET',
        'url.full': `${server.url}/items?api_key=***&page=2`,
        'server.address': '127.0.0.1',
        'server.port': server.port,
      });
    }
    expect(first!.attributes['http.response.status_code']).toBe(503);
    expect(first!.attributes['error.type']).toBe('503');
    expect(first!.attributes['http.request.resend_count']).toBeUndefined();
    expect(first!.status.code).toBe(SpanStatusCode.ERROR);
    expect(second!.attributes['http.response.status_code']).toBe(200);
    expect(second!.attributes['http.request.resend_count']).toBe(1);
    expect(second!.attributes['error.type']).toBeUndefined();
    // The server saw each attempt's own span as parent.
    expect(server.received.map((r) => r.headers.traceparent)).toEqual(attempts.map(traceparentOf));
    // No secret in any attribute or event.
    expect(JSON.stringify(spans.map((s) => [s.attributes, s.events]))).not.toContain('s3cret');

    const retry = root.events.find((e) => e.name === 'staunch.retry');
    expect(retry?.attributes).toMatchObject({
      'staunch.attempt': 1,
      'staunch.retry.reason': 'status',
      'staunch.retry.delay_source': 'backoff',
      'http.response.status_code': 503,
    });
    const wait = root.events.find((e) => e.name === 'staunch.wait');
    expect(wait?.attributes).toMatchObject({
      'staunch.attempt': 2,
      'staunch.wait.reason': 'backoff',
    });
    expect(wait?.attributes?.['staunch.wait.duration_ms']).toBe(7);
  });

  it('concurrent calls to the same URL each get their own attempts', async () => {
    const t = telemetry();
    const server = await flaky(1);
    const otel = instrument(t.providers);
    const fetch = otel.wrap(
      createFetch({ on: otel.on, fetch: otel.transport(), retry: { backoff: constantBackoff(1) } }),
    );
    const responses = await Promise.all([fetch(server.url), fetch(server.url), fetch(server.url)]);
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200]);
    await Promise.all(responses.map((r) => r.text()));
    const spans = t.spans.getFinishedSpans();
    const logical = spans.filter((s) => s.kind === SpanKind.INTERNAL);
    const attempts = spans.filter((s) => s.kind === SpanKind.CLIENT);
    expect(logical).toHaveLength(3);
    expect(attempts).toHaveLength(4);
    const children = logical.map(
      (l) => attempts.filter((a) => parentOf(a) === l.spanContext().spanId).length,
    );
    expect(children.sort()).toEqual([1, 1, 2]);
    // Each logical span's attempt count matches its own children.
    for (const l of logical) {
      const own = attempts.filter((a) => parentOf(a) === l.spanContext().spanId);
      expect(l.attributes['staunch.attempts']).toBe(own.length);
    }
    expect(new Set(server.received.map((r) => r.headers.traceparent))).toEqual(
      new Set(attempts.map(traceparentOf)),
    );
  });

  it('a network failure ends the spans with error.type and the error', async () => {
    const t = telemetry();
    const server = await flaky(0);
    const url = server.url;
    await server.close();
    servers.length = 0;
    const otel = instrument(t.providers);
    const fetch = otel.wrap(
      createFetch({
        on: otel.on,
        fetch: otel.transport(),
        retry: { attempts: 2, backoff: constantBackoff(1) },
      }),
    );
    await expect(fetch(url)).rejects.toThrow(/ECONNREFUSED/);
    const spans = t.spans.getFinishedSpans();
    const root = spans.find((s) => s.kind === SpanKind.INTERNAL)!;
    const attempts = spans.filter((s) => s.kind === SpanKind.CLIENT);
    expect(attempts).toHaveLength(2);
    for (const a of attempts) expect(a.attributes['error.type']).toBe('ECONNREFUSED');
    expect(root.status.code).toBe(SpanStatusCode.ERROR);
    // The logical request failed with staunch's NetworkError, its cause the refusal.
    expect(root.attributes['error.type']).toBe('STAUNCH_NETWORK');
    expect(root.events.map((e) => e.name)).toContain('staunch.give_up');
  });

  it('metrics: attempt duration with resend count, retries by reason, request duration', async () => {
    const t = telemetry();
    const server = await flaky(2);
    const otel = instrument(t.providers);
    const fetch = createFetch({ on: otel.on, retry: { backoff: constantBackoff(1) } });
    expect((await fetch(server.url)).status).toBe(200);

    const duration = await t.metric('http.client.request.duration');
    expect(duration?.descriptor.unit).toBe('s');
    expect(duration?.dataPointType).toBe(DataPointType.HISTOGRAM);
    const byResend = new Map(
      duration!.dataPoints.map((p) => [p.attributes['http.request.resend_count'] ?? 0, p]),
    );
    expect([...byResend.keys()].sort()).toEqual([0, 1, 2]);
    expect(byResend.get(0)!.attributes).toMatchObject({
      'http.request.method': 'GET',
      'http.response.status_code': 503,
      'error.type': '503',
      'server.address': '127.0.0.1',
      'server.port': server.port,
    });
    expect(byResend.get(2)!.attributes['http.response.status_code']).toBe(200);

    const retries = await t.metric('staunch.retries');
    expect(retries!.dataPoints.map((p) => [p.attributes['staunch.retry.reason'], p.value])).toEqual(
      [['status', 2]],
    );
    const requests = await t.metric('staunch.request.duration');
    expect(requests!.dataPoints).toHaveLength(1);
    expect(requests!.dataPoints[0]!.attributes['http.request.resend_count']).toBe(2);
    const waited = await t.metric('staunch.wait.duration');
    expect(waited!.dataPoints.map((p) => p.attributes['staunch.wait.reason'])).toEqual(['backoff']);
  });

  it('breaker state and budget balance per key', async () => {
    const t = telemetry();
    const server = await flaky(3);
    const store = memoryStore();
    const budget = { ratio: 1.5, minPerSecond: 0 };
    const otel = instrument({ ...t.providers, budget: { store, options: budget } });
    const fetch = createFetch({
      on: otel.on,
      store,
      budget,
      breaker: { consecutiveFailures: 2, breakDuration: 60_000 },
      retry: { attempts: 2, backoff: constantBackoff(1) },
    });
    // The request deposits 1.5, its retry withdraws 1, both attempts fail: the circuit opens.
    expect((await fetch(server.url)).status).toBe(503);
    const key = server.url;
    const state = await t.metric('staunch.breaker.state');
    const points = state!.dataPoints.map((p) => [
      p.attributes['staunch.policy.key'],
      p.attributes['staunch.breaker.state'],
      p.value,
    ]);
    expect(points).toEqual(
      expect.arrayContaining([
        [key, 'open', 1],
        [key, 'closed', 0],
        [key, 'half-open', 0],
      ]),
    );
    const balance = await t.metric('staunch.budget.balance');
    const value = balance!.dataPoints.find(
      (p) => p.attributes['staunch.policy.key'] === key,
    )!.value;
    // 0.5 left, decayed since by a 10 s time constant (> 0.4 while under 2 s have passed).
    expect(value).toBeGreaterThan(0.4);
    expect(value).toBeLessThanOrEqual(0.5);
    expect(server.received).toHaveLength(2);
  });
});

describe('staunch/otel with the undici interceptor', () => {
  it('spans per dispatch and per attempt, traceparent on every attempt', async () => {
    const t = telemetry();
    const server = await flaky(1);
    const otel = instrument(t.providers);
    const agent = new Agent().compose(
      otel.interceptor(retryInterceptor({ on: otel.on, retry: { backoff: constantBackoff(1) } })),
    );
    closers.push(() => agent.close());
    const { statusCode, body } = await request(`${server.url}/x?token=abc`, { dispatcher: agent });
    expect(statusCode).toBe(200);
    expect(await body.text()).toBe('ok');
    const spans = t.spans.getFinishedSpans();
    const root = spans.filter((s) => s.kind === SpanKind.INTERNAL);
    const attempts = spans.filter((s) => s.kind === SpanKind.CLIENT);
    expect(root).toHaveLength(1);
    expect(attempts.map((a) => a.attributes['http.response.status_code'])).toEqual([503, 200]);
    for (const a of attempts) expect(parentOf(a)).toBe(root[0]!.spanContext().spanId);
    expect(root[0]!.attributes['url.full']).toBe(`${server.url}/x?token=***`);
    expect(server.received.map((r) => r.headers.traceparent)).toEqual(attempts.map(traceparentOf));
  });
});

describe('instrument options', () => {
  it('rejects unknown options and bad wrappers, naming them', () => {
    expect(() => instrument({ tracer: 1 } as never)).toThrow(TypeError);
    expect(() => instrument({ budget: { store: {} } } as never)).toThrow(/budget\.store/);
    const otel = instrument();
    expect(() => otel.wrap(1 as never)).toThrow(/wrap\(fetch\)/);
    expect(() => otel.transport('x' as never)).toThrow(/transport\(fetch\)/);
  });

  it('without a provider it sends requests untouched (no-op tracer, no traceparent)', async () => {
    const server = await flaky(0);
    const otel = instrument();
    const fetch = otel.wrap(createFetch({ on: otel.on, fetch: otel.transport() }));
    expect((await fetch(server.url)).status).toBe(200);
    expect(server.received[0]!.headers.traceparent).toBeUndefined();
  });
});
