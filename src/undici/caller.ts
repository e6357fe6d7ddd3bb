/**
 * The caller's side of the undici adapters: the one controller the caller's
 * handler gets for the whole logical request (`CallerController`), whichever
 * attempt is handed over, and how an error reaches that handler.
 */
import type { Dispatcher } from 'undici';

type Controller = Dispatcher.DispatchController;
type Handler = Dispatcher.DispatchHandler;

/** What the caller's controller drives of the attempt handed over (attempt.ts). */
export interface HandedOver {
  readonly rawHeaders: Buffer[] | undefined;
  readonly rawTrailers: Buffer[] | undefined;
  callerAbort(reason: Error): void;
  pauseSocket(): void;
  flush(): void;
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
 * (`abortLogical`, the owner's); after, it drives the attempt handed over.
 */
export class CallerController implements Controller {
  // The controller's state, plain fields rather than getters.
  aborted = false;
  paused = false;
  reason: Error | null = null;
  readonly #owner: { abortLogical(reason: Error): void };
  /** The attempt handed over, once there is one. */
  attempt: HandedOver | undefined;

  constructor(owner: { abortLogical(reason: Error): void }) {
    this.#owner = owner;
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
    if (this.aborted) return;
    this.aborted = true;
    const error = reason ?? new Error('The request was aborted');
    this.reason = error;
    if (this.attempt !== undefined) this.attempt.callerAbort(error);
    else this.#owner.abortLogical(error);
  }

  pause(): void {
    this.paused = true;
    this.attempt?.pauseSocket();
  }

  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    this.attempt?.flush();
  }
}
