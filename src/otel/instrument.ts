/**
 * `instrument()`: OpenTelemetry spans and metrics from staunch's events.
 *
 * Events say what happened but not to which call (they carry the method and
 * the URL, and two calls may share both), so the spans need a scope per
 * logical request: `wrap()` (a fetch) or `interceptor()` (undici) opens one
 * in an `AsyncLocalStorage` around the call, and every listener of the call
 * finds it there, however many calls run at once. Metrics need no scope: the
 * listeners alone feed them.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import {
  type Context,
  context,
  type MeterProvider,
  metrics,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  type TracerProvider,
  trace,
} from '@opentelemetry/api';
import type { StaunchListeners } from '../events.js';
import type { FetchLike } from '../fetch.js';
import { redactUrl } from '../internal/redact.js';
import { checkObject, describe } from '../internal/validate.js';
import { type BudgetOptions, resolveBudgetOptions } from '../policy/budget/budget.js';
import { originKey, type PolicyKey } from '../policy/policies.js';
import { upperMethod } from '../request-options.js';
import type { StateStore } from '../store/store.js';
import { withHeader } from '../undici/headers.js';
import {
  type Attributes,
  errorType,
  requestAttributes,
  spanName,
  traceparent,
} from './attributes.js';
import { StaunchMetrics } from './metrics.js';

/** Options of {@link instrument}. */
export interface InstrumentOptions {
  /** Where spans go. @default the global tracer provider (`trace.getTracerProvider()`) */
  tracerProvider?: TracerProvider;
  /** Where metrics go. @default the global meter provider (`metrics.getMeterProvider()`) */
  meterProvider?: MeterProvider;
  /**
   * To report `staunch.budget.balance` per policy key: the client's store and
   * budget options (the same objects given to `createFetch`). @default no budget gauge
   */
  budget?: { store: StateStore; options?: BudgetOptions | boolean; key?: PolicyKey };
}

/** What {@link instrument} returns. */
export interface Instrumentation {
  /** The listeners to give `createFetch` or `retryInterceptor` as `on`. */
  readonly on: StaunchListeners;
  /**
   * Wraps a staunch fetch so that each call is one span, with a child span per
   * attempt. Works with the `createFetch` of `staunch` and of `staunch/undici`.
   */
  wrap<F extends (input: string | URL | Request, init?: RequestInit) => Promise<Response>>(
    fetch: F,
  ): F;
  /**
   * Wraps the transport of `createFetch` (its `fetch` option) to send
   * `traceparent` on every attempt, the attempt's own span as parent.
   * @default globalThis.fetch as the transport
   */
  transport(fetch?: FetchLike): FetchLike;
  /**
   * Wraps `retryInterceptor(…)` for `Dispatcher.compose`: each dispatch is one
   * span, each attempt a child span whose `traceparent` it carries.
   */
  interceptor<I extends (dispatch: never) => unknown>(retry: I): I;
}

/** The span state of one logical request. */
interface Scope {
  readonly span: Span;
  readonly context: Context;
  /** The attempt last started, whose `traceparent` the transport sends. */
  attempt: Span | undefined;
  /** The attempts in flight (several while a request is hedged), by number. */
  readonly inFlight: Map<number, Span>;
  ended: boolean;
}

const TRACEPARENT = 'traceparent';
/** Span attribute: the response is a replay of its idempotency key's first request. */
const REPLAYED = 'staunch.idempotent_replayed';
/** Attributes of hedged requests (docs/hedging.md): a hedge's span, a loser's, the winner on the request's. */
const HEDGE = 'staunch.hedge';
const LOST = 'staunch.hedge.lost';
const WON = 'staunch.hedge.won_attempt';

/**
 * OpenTelemetry for staunch: spans per logical request and per attempt
 * (HTTP client semantic conventions), span events for each retry, wait and
 * give-up, and metrics. See docs/otel.md.
 *
 * @example
 * const otel = instrument({ tracerProvider, meterProvider });
 * const fetch = otel.wrap(createFetch({ on: otel.on, fetch: otel.transport() }));
 */
export function instrument(options: InstrumentOptions = {}): Instrumentation {
  const o = checkObject('instrument options', options, [
    'tracerProvider',
    'meterProvider',
    'budget',
  ]) as InstrumentOptions;
  const tracer: Tracer = (o.tracerProvider ?? trace.getTracerProvider()).getTracer('staunch');
  const meter = (o.meterProvider ?? metrics.getMeterProvider()).getMeter('staunch');
  const budget = o.budget;
  let source: ConstructorParameters<typeof StaunchMetrics>[1];
  if (budget !== undefined) {
    if (typeof budget?.store?.run !== 'function') {
      throw new TypeError(`budget.store must be a StateStore, got ${describe(budget?.store)}`);
    }
    const resolved = resolveBudgetOptions(budget.options);
    if (resolved !== false) {
      source = { store: budget.store, options: resolved, key: budget.key ?? originKey };
    }
  }
  const m = new StaunchMetrics(meter, source);
  const storage = new AsyncLocalStorage<Scope>();
  const current = (): Scope | undefined => {
    const scope = storage.getStore();
    return scope === undefined || scope.ended ? undefined : scope;
  };

  const open = (method: string, url: string): Scope => {
    const span = tracer.startSpan(`staunch ${spanName(method)}`, {
      kind: SpanKind.INTERNAL,
      attributes: requestAttributes(method, url),
    });
    return {
      span,
      context: trace.setSpan(context.active(), span),
      attempt: undefined,
      inFlight: new Map(),
      ended: false,
    };
  };
  const close = (scope: Scope, status: number | undefined, code: string | undefined): void => {
    if (scope.ended) return;
    scope.ended = true;
    for (const span of scope.inFlight.values()) finishSpan(span, undefined, code ?? 'ABORTED');
    scope.inFlight.clear();
    scope.attempt = undefined;
    finishSpan(scope.span, status, code);
  };

  const on: StaunchListeners = {
    attemptStart(event) {
      m.seen(event.method, event.url);
      const scope = current();
      if (scope === undefined) return;
      const attributes = requestAttributes(event.method, event.url);
      if (event.attempt > 1) attributes['http.request.resend_count'] = event.attempt - 1;
      if (event.hedge) attributes[HEDGE] = true;
      scope.attempt = tracer.startSpan(
        spanName(event.method),
        { kind: SpanKind.CLIENT, attributes },
        scope.context,
      );
      scope.inFlight.set(event.attempt, scope.attempt);
    },
    attempt(event) {
      const attributes = requestAttributes(event.method, event.url);
      delete attributes['url.full'];
      if (event.attempt > 1) attributes['http.request.resend_count'] = event.attempt - 1;
      if (event.status !== undefined) attributes['http.response.status_code'] = event.status;
      // A hedge's loser was cancelled by staunch: no error of the upstream's.
      const type = event.lost ? undefined : errorType(event.status, event.code);
      if (type !== undefined) attributes['error.type'] = type;
      if (event.lost) attributes[LOST] = true;
      m.attempt(attributes, event.duration);
      const scope = current();
      const span = scope?.inFlight.get(event.attempt);
      if (span === undefined) return;
      scope!.inFlight.delete(event.attempt);
      if (scope!.attempt === span) scope!.attempt = undefined;
      if (event.replayed) span.setAttribute(REPLAYED, true);
      if (event.lost) {
        span.setAttribute(LOST, true);
        span.end();
      } else finishSpan(span, event.status, event.code);
    },
    retry(event) {
      m.retry({ 'staunch.retry.reason': event.reason, ...server(event.url) });
      current()?.span.addEvent('staunch.retry', {
        'staunch.attempt': event.attempt,
        'staunch.retry.reason': event.reason,
        'staunch.retry.delay_ms': event.delay,
        'staunch.retry.delay_source': event.delaySource,
        ...(event.status !== undefined && { 'http.response.status_code': event.status }),
        ...(event.code !== undefined && { 'error.type': event.code }),
      });
    },
    wait(event) {
      m.wait({ 'staunch.wait.reason': event.reason, ...server(event.url) }, event.duration);
      current()?.span.addEvent('staunch.wait', {
        'staunch.attempt': event.attempt,
        'staunch.wait.reason': event.reason,
        'staunch.wait.duration_ms': event.duration,
      });
    },
    giveUp(event) {
      m.giveUp({ 'staunch.give_up.reason': event.reason, ...server(event.url) });
      const scope = current();
      if (scope === undefined) return;
      scope.span.addEvent('staunch.give_up', {
        'staunch.give_up.reason': event.reason,
        'staunch.attempts': event.attempts,
        ...(event.delay !== undefined && { 'staunch.give_up.delay_ms': event.delay }),
      });
      scope.span.setAttribute('staunch.give_up.reason', event.reason);
    },
    end(event) {
      const attributes: Attributes = {
        ...requestAttributes(event.method, event.url),
        'http.request.resend_count': Math.max(0, event.attempts - 1),
      };
      delete attributes['url.full'];
      if (event.status !== undefined) attributes['http.response.status_code'] = event.status;
      const type = errorType(event.status, event.code);
      if (type !== undefined) attributes['error.type'] = type;
      m.request(attributes, event.duration);
      const scope = current();
      if (scope === undefined) return;
      scope.span.setAttribute('staunch.attempts', event.attempts);
      if (event.replayed) scope.span.setAttribute(REPLAYED, true);
      if (event.attempts > 1)
        scope.span.setAttribute('http.request.resend_count', event.attempts - 1);
      if (event.hedges !== undefined) scope.span.setAttribute('staunch.hedges', event.hedges);
      if (event.won !== undefined) scope.span.setAttribute(WON, event.won);
      close(scope, event.status, event.code);
    },
    breakerStateChange(event) {
      m.circuit(event.key, event.to);
      const scope = current();
      scope?.span.addEvent('staunch.breaker', {
        'staunch.policy.key': event.key,
        'staunch.breaker.from': event.from,
        'staunch.breaker.to': event.to,
      });
    },
  };

  const header = (): string | undefined => {
    const span = current()?.attempt;
    return span === undefined ? undefined : traceparent(span.spanContext());
  };

  return {
    on,
    wrap(fetch) {
      if (typeof fetch !== 'function') {
        throw new TypeError(`wrap(fetch): fetch must be a function, got ${describe(fetch)}`);
      }
      const wrapped = (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
        const { method, url } = describeCall(input, init);
        const scope = open(method, url);
        // A call that fails before the executor runs (bad input) has no `end` event.
        return storage
          .run(scope, () => fetch(input, init))
          .then(
            (response) => {
              close(scope, response.status, undefined);
              return response;
            },
            (error: unknown) => {
              close(scope, undefined, codeOf(error));
              throw error;
            },
          );
      };
      return wrapped as typeof fetch;
    },
    transport(fetch = globalThis.fetch as FetchLike) {
      if (typeof fetch !== 'function') {
        throw new TypeError(`transport(fetch): fetch must be a function, got ${describe(fetch)}`);
      }
      return (url, init) => {
        const value = header();
        if (value === undefined) return fetch(url, init);
        const headers = new Headers(init.headers);
        headers.set(TRACEPARENT, value);
        return fetch(url, { ...init, headers: [...headers] });
      };
    },
    interceptor(retry) {
      if (typeof retry !== 'function') {
        throw new TypeError(
          `interceptor(retry): retry must be an interceptor, got ${describe(retry)}`,
        );
      }
      type Opts = { method?: string; origin?: string | URL; path?: string; headers?: unknown };
      type Dispatch = (opts: Opts, handler: unknown) => boolean;
      const inner =
        (dispatch: Dispatch): Dispatch =>
        (opts, handler) => {
          const value = header();
          if (value === undefined) return dispatch(opts, handler);
          const headers = withHeader(opts.headers as never, TRACEPARENT, value);
          return dispatch({ ...opts, headers }, handler);
        };
      const composed = (dispatch: Dispatch): Dispatch => {
        const staunch = (retry as unknown as (d: Dispatch) => Dispatch)(inner(dispatch));
        return (opts, handler) => {
          const method = upperMethod(opts.method ?? 'GET');
          const origin =
            typeof opts.origin === 'string'
              ? opts.origin.replace(/\/$/, '')
              : (opts.origin?.origin ?? '');
          const scope = open(method, redactUrl(`${origin}${opts.path ?? ''}`));
          // The scope ends with the `end` event (the interceptor passes CONNECT and upgrades through: none).
          return storage.run(scope, () => staunch(opts, handler));
        };
      };
      return composed as unknown as typeof retry;
    },
  };
}

function finishSpan(span: Span, status: number | undefined, code: string | undefined): void {
  if (status !== undefined) span.setAttribute('http.response.status_code', status);
  const type = errorType(status, code);
  if (type !== undefined) {
    span.setAttribute('error.type', type);
    span.setStatus({ code: SpanStatusCode.ERROR });
  }
  span.end();
}

function server(url: string): Attributes {
  const a = requestAttributes('GET', url);
  const out: Attributes = {};
  if (a['server.address'] !== undefined) out['server.address'] = a['server.address'];
  if (a['server.port'] !== undefined) out['server.port'] = a['server.port'];
  return out;
}

function describeCall(
  input: string | URL | Request,
  init: RequestInit | undefined,
): { method: string; url: string } {
  const request = typeof input === 'object' && !(input instanceof URL) ? input : undefined;
  const raw =
    typeof input === 'string' ? input : input instanceof URL ? input.href : String(request?.url);
  const method = upperMethod(init?.method ?? request?.method ?? 'GET');
  return { method, url: redactUrl(raw) };
}

function codeOf(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string') return code;
  return error instanceof Error ? error.name : '_OTHER';
}
