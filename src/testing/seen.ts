/**
 * What a faulty transport or server saw: every request, in arrival order,
 * with the step it was answered with. Tests assert on these counts.
 */
import type { FaultName } from './script.js';

/** One request as received. */
export interface SeenRequest {
  /** Arrival order: 0 for the first request (its head) seen, then 1, 2… */
  readonly index: number;
  readonly method: string;
  /** The full URL (the server: its own origin plus the request target). */
  readonly url: string;
  /** Header names in lower case; repeated headers joined with `, `. */
  readonly headers: Readonly<Record<string, string>>;
  /** The body's bytes (empty when there was none). */
  readonly bytes: Uint8Array;
  /** The `Idempotency-Key` header, if the request carried one. */
  readonly idempotencyKey: string | undefined;
  /** The step it was answered with: a fault's name or the response's status. */
  readonly fault: FaultName | number;
}

const decoder = new TextDecoder();

/** The requests a fault transport or server saw, and views of them. */
export class Seen {
  /** Every request, in arrival order. */
  readonly requests: SeenRequest[] = [];

  /** Requests seen: every attempt that reached the transport or the server. */
  get attempts(): number {
    return this.requests.length;
  }

  /** Each request's method. */
  get methods(): string[] {
    return this.requests.map((r) => r.method);
  }

  /** Each request's URL. */
  get urls(): string[] {
    return this.requests.map((r) => r.url);
  }

  /** Each request's body as UTF-8 text. */
  get bodies(): string[] {
    return this.requests.map((r) => decoder.decode(r.bytes));
  }

  /** Each request's `Idempotency-Key` (`undefined` where it had none). */
  get idempotencyKeys(): (string | undefined)[] {
    return this.requests.map((r) => r.idempotencyKey);
  }

  /** Requests answered with `fault` (a name, or a status). */
  count(fault: FaultName | number): number {
    return this.requests.filter((r) => r.fault === fault).length;
  }

  /** Records one request (`index`: its arrival order); returns it. @internal */
  record(request: Omit<SeenRequest, 'idempotencyKey'>): SeenRequest {
    const seen: SeenRequest = { ...request, idempotencyKey: request.headers['idempotency-key'] };
    this.requests.push(seen);
    return seen;
  }
}
