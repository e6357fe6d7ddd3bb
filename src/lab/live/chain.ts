/**
 * The deadline chain, live: a client calls service A, A calls service B with
 * staunch, B's work is slow and variable, and the client's deadline is
 * shorter than some of that work. Measured: the work B does after the client
 * gave up, with the time left sent down the chain (`deadlineHeader` on both
 * clients, `deadlineSignal` in A and B) and without it. Real sockets on
 * loopback, both services in this process; B's work is a wait on the clock
 * that its signal can end (a query, a computation that checks its signal).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { deadlineSignal } from '../../deadline/index.js';
import { createFetch } from '../../fetch.js';
import { type Clock, systemClock } from '../../internal/clock.js';
import { checkNumber, checkObject, keysOf } from '../../internal/validate.js';
import { seededRandom } from '../random.js';

/** Options of {@link runChain}. Durations in ms. */
export interface ChainOptions {
  /** Logical requests the client sends. @default 100 */
  requests?: number;
  /** Of them, in flight at once. @default 10 */
  concurrency?: number;
  /** The client's `timeout.total`. @default 1_000 */
  deadline?: number;
  /** Seeds B's work times. @default 1 */
  seed?: number;
  /** Send the time left down the chain. @default true */
  header?: boolean;
  /** B's work for request `i`, in ms. @default seeded: 70 % U(100, 800), 30 % U(1_500, 4_000) */
  work?: (i: number) => number;
  /** Time source (B's work, the deadlines, the measures). @default systemClock */
  clock?: Clock;
}

/** What one run measured. Times are ms of B's work. */
export interface ChainResult {
  readonly header: boolean;
  readonly requests: number;
  /** Logical requests the client gave up on (its deadline passed). */
  readonly gaveUp: number;
  /** B's work in all. */
  readonly work: number;
  /** B's work done after the client had given up on that request. */
  readonly wasted: number;
  /** Requests B worked on past the client's deadline. */
  readonly wastedRequests: number;
}

const KEYS = keysOf<ChainOptions>()([
  'requests',
  'concurrency',
  'deadline',
  'seed',
  'header',
  'work',
  'clock',
]);

const ID = 'x-chain-id';
const HEADER = 'grpc-timeout';

/** B's default work: most requests quick, some far beyond the client's deadline. */
function seededWork(seed: number): (i: number) => number {
  const random = seededRandom(seed, 'chain:work');
  const times: number[] = [];
  return (i) => {
    while (times.length <= i) {
      const slow = random() < 0.3;
      times.push(slow ? 1_500 + random() * 2_500 : 100 + random() * 700);
    }
    return times[i]!;
  };
}

/** Runs the chain once; every server and socket is closed when it resolves. */
export async function runChain(options: ChainOptions = {}): Promise<ChainResult> {
  const o = checkObject('runChain options', options, KEYS) as ChainOptions;
  const requests = checkNumber('requests', o.requests ?? 100, { min: 1, integer: true });
  const concurrency = checkNumber('concurrency', o.concurrency ?? 10, { min: 1, integer: true });
  const deadline = checkNumber('deadline', o.deadline ?? 1_000, { min: 1 });
  const header = o.header ?? true;
  const work = o.work ?? seededWork(checkNumber('seed', o.seed ?? 1, { integer: true }));
  const clock = o.clock ?? systemClock;
  const deadlineHeader = header ? { name: HEADER, format: 'grpc-timeout' as const } : false;

  /** When the client gives up on each request: its call's start plus its deadline. */
  const givesUp = new Map<string, number>();
  const done: { id: string; start: number; end: number }[] = [];
  /** Requests each service received, and answered or dropped. */
  const seen = { a: 0, aDone: 0, b: 0 };

  const b = await listen((req, res) => {
    const id = req.headers[ID] as string;
    seen.b++;
    const d = header ? deadlineSignal(res, { header: HEADER, clock }) : undefined;
    const start = clock.now();
    const finish = (status: number): void => {
      done.push({ id, start, end: clock.now() });
      if (!res.destroyed) res.writeHead(status).end();
    };
    clock.sleep(work(Number(id)), d?.signal).then(
      () => finish(200),
      () => finish(504),
    );
  });
  // One attempt and no breaker on either hop: the runs differ only by the header.
  const toB = createFetch({ clock, retry: false, breaker: false, deadlineHeader });
  const a = await listen((req, res) => {
    const id = req.headers[ID] as string;
    seen.a++;
    const d = header ? deadlineSignal(res, { header: HEADER, clock, max: 60_000 }) : undefined;
    const total = d === undefined ? undefined : Math.max(1, d.timeLeft());
    toB(`${b.url}/work`, {
      headers: { [ID]: id },
      signal: d?.signal ?? null,
      staunch: total === undefined ? {} : { timeout: { total } },
    }).then(
      async (answer) => {
        await answer.arrayBuffer().catch(() => undefined);
        seen.aDone++;
        if (!res.destroyed) res.writeHead(answer.status).end();
      },
      () => {
        seen.aDone++;
        if (!res.destroyed) res.writeHead(504).end();
      },
    );
  });
  const client = createFetch({
    clock,
    retry: false,
    breaker: false,
    timeout: { total: deadline },
    deadlineHeader,
  });

  let next = 0;
  let gaveUp = 0;
  const worker = async (): Promise<void> => {
    while (next < requests) {
      const id = String(next++);
      givesUp.set(id, clock.now() + deadline);
      try {
        const res = await client(`${a.url}/`, { headers: { [ID]: id } });
        await res.arrayBuffer();
      } catch {
        gaveUp++;
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(concurrency, requests) }, worker));
    // A and B may still be working on requests the client gave up on: wait for all of them
    // (a request the client gave up on before it reached A, or A before B, never arrives).
    await until(() => seen.aDone === seen.a && done.length === seen.b);
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
  let total = 0;
  let wasted = 0;
  let wastedRequests = 0;
  for (const { id, start, end } of done) {
    total += end - start;
    const after = end - Math.max(start, givesUp.get(id)!);
    if (after > 0) {
      wasted += after;
      wastedRequests++;
    }
  }
  return { header, requests, gaveUp, work: total, wasted, wastedRequests };
}

/** Waits, on the event loop (not the clock), until `check` holds for 50 ms of real time in a row. */
async function until(check: () => boolean): Promise<void> {
  for (let quiet = 0; quiet < 10; quiet = check() ? quiet + 1 : 0) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

interface Service {
  readonly url: string;
  close(): Promise<void>;
}

async function listen(
  handle: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<Service> {
  const server: Server = createServer((req, res) => {
    req.resume();
    handle(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
