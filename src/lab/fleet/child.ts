/**
 * The entry of one fleet member (a child process of `startFleet`): builds the
 * store, loads the member module, waits for the fleet's go, runs it, reports.
 * Exits when its parent goes away.
 */
import { isAbsolute } from 'node:path';
import { pathToFileURL } from 'node:url';
import { connectRedisStore } from '../../redis/connect.js';
import { scrub } from '../../redis/redact.js';
import { memoryStore } from '../../store/memory.js';
import type { StateStore } from '../../store/store.js';
import type { FleetCommand, FleetMemberMain, FleetReport } from './harness.js';

function send(report: FleetReport): Promise<void> {
  return new Promise((resolve) => {
    if (process.send === undefined) resolve();
    else process.send(report, undefined, {}, () => resolve());
  });
}

function waitForGo(): Promise<void> {
  return new Promise((resolve) => {
    const onMessage = (message: FleetCommand): void => {
      if (message.type !== 'go') return;
      process.off('message', onMessage);
      resolve();
    };
    process.on('message', onMessage);
  });
}

async function main(command: Extract<FleetCommand, { type: 'start' }>): Promise<void> {
  let store: StateStore;
  let close = async (): Promise<void> => {};
  if (command.store === 'local') store = memoryStore();
  else {
    const connection = await connectRedisStore(command.store, command.storeOptions);
    store = connection.store;
    close = connection.close;
  }
  try {
    const url = isAbsolute(command.module) ? pathToFileURL(command.module).href : command.module;
    const loaded = (await import(url)) as { default?: unknown };
    if (typeof loaded.default !== 'function') {
      throw new TypeError(`${command.module} has no default export function`);
    }
    const run = loaded.default as FleetMemberMain;
    const go = waitForGo();
    await send({ type: 'ready' });
    await go;
    const value = await run({
      index: command.index,
      processes: command.processes,
      input: command.input,
      store,
      storeKind: command.store === 'local' ? 'local' : 'redis',
    });
    await send({ type: 'result', value: value ?? null });
  } finally {
    await close();
  }
}

process.on('disconnect', () => process.exit(1));
process.once('message', (command: FleetCommand) => {
  if (command.type !== 'start') return;
  main(command).then(
    () => process.exit(0),
    async (error: unknown) => {
      const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
      const secrets = command.store === 'local' ? [] : [new URL(command.store).password];
      await send({ type: 'error', message: scrub(text, secrets) });
      process.exit(1);
    },
  );
});
