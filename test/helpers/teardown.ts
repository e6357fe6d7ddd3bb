import { afterEach } from 'vitest';

/** What a test opens and must close: a server, an undici agent, a store. */
export interface Closable {
  close(): unknown;
}

/** What a file's tests hand over to be closed after each test. */
export interface Teardown {
  /** Closes `thing` after the running test; returns it, so `open.add(await httpServer(…))` reads in one line. */
  add<T extends Closable>(thing: T): T;
  /** Runs `fn` after the running test: a fake clock's `stop`, anything without `close()`. */
  defer(fn: () => unknown): void;
}

/**
 * The one way tests close what they opened. Call it once per file (or per
 * `describe`); after each test, everything added during it is closed, last
 * opened first (a client before the server it talks to), each awaited, all of
 * them even when one throws (the first error is rethrown afterwards).
 */
export function closeAfterEach(): Teardown {
  const open: (() => unknown)[] = [];
  afterEach(async () => {
    let failure: { error: unknown } | undefined;
    for (const close of open.splice(0).reverse()) {
      try {
        await close();
      } catch (error) {
        failure ??= { error };
      }
    }
    if (failure) throw failure.error;
  });
  return {
    add(thing) {
      open.push(() => thing.close());
      return thing;
    },
    defer(fn) {
      open.push(fn);
    },
  };
}
