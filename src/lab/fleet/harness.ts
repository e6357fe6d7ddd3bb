/**
 * A fleet on one machine: P Node processes that each build a state store
 * (local memory, or the shared Redis store) and run the same module at the
 * same moment, then hand back a JSON result. The lab's `--fleet` run and the
 * fleet tests use it to compare local state with shared state.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { checkNumber, checkObject, describe } from '../../internal/validate.js';
import type { ConnectRedisStoreOptions } from '../../redis/connect.js';
import type { Json, StateStore } from '../../store/store.js';

/** What a member module's default export receives. */
export interface FleetMemberContext {
  /** 0 … processes − 1. */
  readonly index: number;
  readonly processes: number;
  /** `FleetOptions.input`, as JSON. */
  readonly input: Json;
  /** A fresh `memoryStore()` (`store: 'local'`) or this process's Redis store. */
  readonly store: StateStore;
  readonly storeKind: 'local' | 'redis';
}

/** The default export of a member module. Its result must be JSON. */
export type FleetMemberMain = (member: FleetMemberContext) => Json | Promise<Json>;

/** Options of {@link startFleet}. Durations in ms. */
export interface FleetOptions {
  /** Number of processes. */
  processes: number;
  /** Absolute path or `file:` URL of an ES module whose default export is a {@link FleetMemberMain}. */
  module: string | URL;
  /**
   * `'local'`: each process keeps its own state in memory. A `redis://` URL:
   * every process shares state through it (`connectRedisStore`).
   * @default 'local'
   */
  store?: string | undefined;
  /** Options of each member's Redis store. @default {} */
  storeOptions?: ConnectRedisStoreOptions | undefined;
  /** Handed to every member. @default null */
  input?: Json | undefined;
  /**
   * Members still running after this long are killed and `results` rejects.
   * @default 120_000
   */
  timeout?: number | undefined;
}

/** A running fleet. */
export interface Fleet {
  /**
   * Each member's result, by index, once all have answered. Rejects if a
   * member throws, dies, or the timeout passes (the others are then killed).
   */
  readonly results: Promise<Json[]>;
  /** Process ids, by index. */
  readonly pids: readonly number[];
  /** Kills the members still running and waits for them to exit. */
  stop(): Promise<void>;
}

/** Parent → member. */
export type FleetCommand =
  | {
      type: 'start';
      index: number;
      processes: number;
      module: string;
      store: string;
      storeOptions: ConnectRedisStoreOptions;
      input: Json;
    }
  | { type: 'go' };

/** Member → parent. */
export type FleetReport =
  | { type: 'ready' }
  | { type: 'result'; value: Json }
  | { type: 'error'; message: string };

const MEMBER_ENTRY = fileURLToPath(new URL('./child.js', import.meta.url));

interface ResolvedFleetOptions {
  processes: number;
  module: string;
  store: string;
  storeOptions: ConnectRedisStoreOptions;
  input: Json;
  timeout: number;
}

function check(options: FleetOptions): ResolvedFleetOptions {
  const o = checkObject('startFleet options', options, [
    'processes',
    'module',
    'store',
    'storeOptions',
    'input',
    'timeout',
  ]) as Partial<FleetOptions>;
  const processes = checkNumber('startFleet.processes', o.processes, { min: 1, integer: true });
  let module: string;
  if (o.module instanceof URL) module = o.module.href;
  else if (typeof o.module === 'string') module = o.module;
  else throw new TypeError(`startFleet.module must be a path or URL, got ${describe(o.module)}`);
  const store = o.store ?? 'local';
  if (typeof store !== 'string' || (store !== 'local' && !/^rediss?:\/\//.test(store))) {
    throw new TypeError(
      `startFleet.store must be 'local' or a redis:// URL, got ${describe(store)}`,
    );
  }
  const timeout = checkNumber('startFleet.timeout', o.timeout ?? 120_000, {
    min: 0,
    exclusiveMin: true,
  });
  return {
    processes,
    module,
    store,
    storeOptions: o.storeOptions ?? {},
    input: o.input ?? null,
    timeout,
  };
}

/**
 * Starts `processes` Node processes, each running `module` against its own
 * store. Members start together: each builds its store and loads the module,
 * then waits until all are ready. Children die with the parent (they exit when
 * the IPC channel closes).
 * @example
 * const fleet = startFleet({ processes: 4, module: new URL('./member.js', import.meta.url),
 *                            store: 'redis://127.0.0.1:6379', input: { url } });
 * const results = await fleet.results;
 */
export function startFleet(options: FleetOptions): Fleet {
  const o = check(options);
  const children: ChildProcess[] = [];
  const exited: Promise<void>[] = [];
  const results: Json[] = new Array(o.processes).fill(null);
  let ready = 0;
  let done = 0;
  let settled = false;
  let finish!: (error?: Error) => void;
  const promise = new Promise<Json[]>((resolve, reject) => {
    finish = (error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (error === undefined) resolve(results);
      else {
        for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
        reject(error);
      }
    };
  });
  promise.catch(() => {});
  const timer = setTimeout(
    () => finish(new Error(`fleet: members still running after ${o.timeout} ms`)),
    o.timeout,
  );

  for (let index = 0; index < o.processes; index++) {
    const child = fork(MEMBER_ENTRY, [], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      // An inspector flag would make every member fight for the same port.
      execArgv: process.execArgv.filter((arg) => !arg.startsWith('--inspect')),
    });
    children.push(child);
    let answered = false;
    exited.push(
      new Promise<void>((resolve) => {
        child.once('exit', (code, signal) => {
          if (!answered) {
            finish(new Error(`fleet: member ${index} exited (${signal ?? `code ${code}`})`));
          }
          resolve();
        });
      }),
    );
    child.on('error', (error) => finish(error));
    child.on('message', (message: FleetReport) => {
      if (message.type === 'ready') {
        if (++ready === o.processes) for (const c of children) c.send({ type: 'go' });
      } else if (message.type === 'result') {
        answered = true;
        results[index] = message.value;
        if (++done === o.processes) finish();
      } else if (message.type === 'error') {
        answered = true;
        finish(new Error(`fleet: member ${index} failed: ${message.message}`));
      }
    });
    const start: FleetCommand = {
      type: 'start',
      index,
      processes: o.processes,
      module: o.module,
      store: o.store,
      storeOptions: o.storeOptions,
      input: o.input,
    };
    child.send(start);
  }

  return {
    results: promise,
    pids: children.map((c) => c.pid ?? -1),
    async stop(): Promise<void> {
      for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
      await Promise.all(exited);
      finish(new Error('fleet: stopped'));
    },
  };
}
