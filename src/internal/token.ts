/**
 * A signal for staunch's own code, as the executor reads one: `aborted`,
 * `reason`, `throwIfAborted()`, `addEventListener('abort', fn)` and
 * `removeEventListener('abort', fn)`, and nothing else. A real
 * `AbortController` per request cost 3–12 µs on Node 20 (its signal is an
 * `EventTarget` made transferable); a plain object does the same work for a
 * fraction of that.
 *
 * Used for the caller's side of an undici dispatch and for the attempts of
 * an exchange that declares `tokenSignal` (its transport reads the signal
 * only through these members). Never hand it to a WHATWG fetch or to user
 * code.
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

  /**
   * Calls `child(reason)` on abort; returns the function that undoes it
   * (idempotent). What `linkSignal` does for a token: a token lives for one
   * request, so it needs none of the sharing a long-lived signal does.
   */
  link(child: (reason: unknown) => void): () => void {
    const listener = (): void => child(this.reason);
    this.addEventListener('abort', listener);
    return () => this.removeEventListener('abort', listener);
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
