/**
 * The caller's side of one logical request in the undici adapters, as the
 * executor reads a signal: `aborted`, `reason`, `throwIfAborted()`,
 * `addEventListener('abort', fn)` and `removeEventListener('abort', fn)`, and
 * nothing else. A real `AbortController` per request cost 3–12 µs on Node 20
 * (its signal is an `EventTarget` made transferable), and the executor links
 * to the caller's signal with a single listener (src/internal/signals.ts),
 * so a plain object does the same work for a fraction of that.
 *
 * Only for signals that staunch's own code reads (the executor and the
 * policies' waits): never hand it to a transport or to user code.
 */
type Listener = () => void;

export class AbortToken {
  aborted = false;
  reason: unknown;
  #listeners: Listener[] | undefined;

  addEventListener(_type: 'abort', listener: Listener): void {
    if (this.aborted) return;
    if (this.#listeners === undefined) this.#listeners = [listener];
    else this.#listeners.push(listener);
  }

  removeEventListener(_type: 'abort', listener: Listener): void {
    const listeners = this.#listeners;
    if (listeners === undefined) return;
    const i = listeners.indexOf(listener);
    if (i !== -1) listeners.splice(i, 1);
  }

  throwIfAborted(): void {
    if (this.aborted) throw this.reason;
  }

  /** Aborts once; every listener runs once (as with `{ once: true }`), then all are dropped. */
  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const listeners = this.#listeners;
    this.#listeners = undefined;
    if (listeners !== undefined) for (const listener of listeners) listener();
  }

  /** This token, typed as the signal the executor's `LogicalRequest` takes. */
  get signal(): AbortSignal {
    return this as unknown as AbortSignal;
  }
}
