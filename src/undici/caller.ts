/**
 * The caller's side of the undici adapters: what each attempt of a logical
 * request tells the caller's handler (`Caller`), and the one controller that
 * handler gets for the whole request (`CallerController`), whichever attempt
 * is handed over.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';

type Controller = Dispatcher.DispatchController;
type Handler = Dispatcher.DispatchHandler;

/** What the caller's controller drives of the attempt handed over (attempt.ts). */
export interface HandedOver {
  readonly rawHeaders: Buffer[] | null | undefined;
  readonly rawTrailers: Buffer[] | null | undefined;
  callerAbort(reason: Error): void;
  pauseSocket(): void;
  flush(): void;
}

/**
 * The caller's side of one logical request, as each attempt reaches it:
 * told when an attempt starts (undici's context with it) and of 1xx
 * responses, which go to the caller as a bare `Agent` hands them on.
 */
export interface Caller {
  /** An attempt's `onRequestStart`: the caller is told once, with that attempt's context. */
  started(context: unknown): void;
  /** A 1xx response of an attempt. */
  informational(status: number, headers: IncomingHttpHeaders, text: string | undefined): void;
}

/** Hands `error` to the caller's handler; a throw from it has nowhere left to go. */
export function deliverError(handler: Handler, controller: Controller, error: Error): void {
  try {
    handler.onResponseError?.(controller, error);
  } catch {
    // The handler's own error handler failed: undici would drop this too.
  }
}

/**
 * The controller the caller's handler gets, one for the whole logical
 * request: before a response is handed over its abort ends the request
 * (`aborting`, the owner's); after, it drives the attempt handed over.
 */
export class CallerController implements Controller {
  #aborted = false;
  #paused = false;
  #reason: Error | null = null;
  readonly #aborting: (reason: Error) => void;
  /** The attempt handed over, once there is one. */
  attempt: HandedOver | undefined;

  constructor(aborting: (reason: Error) => void) {
    this.#aborting = aborting;
  }

  get aborted(): boolean {
    return this.#aborted;
  }

  get paused(): boolean {
    return this.#paused;
  }

  get reason(): Error | null {
    return this.#reason;
  }

  /** The response's raw headers as undici read them (undici 7), for a caller on the legacy API. */
  get rawHeaders(): Buffer[] | null {
    return this.attempt?.rawHeaders ?? null;
  }

  /** The same for the trailers, once the body has ended. */
  get rawTrailers(): Buffer[] | null {
    return this.attempt?.rawTrailers ?? null;
  }

  abort(reason: Error): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason ?? new Error('The request was aborted');
    if (this.attempt !== undefined) this.attempt.callerAbort(this.#reason);
    else this.#aborting(this.#reason);
  }

  pause(): void {
    this.#paused = true;
    this.attempt?.pauseSocket();
  }

  resume(): void {
    if (!this.#paused) return;
    this.#paused = false;
    this.attempt?.flush();
  }
}
