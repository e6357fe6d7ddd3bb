/**
 * One process of a fleet run (`staunch lab --fleet P`): the default export is
 * a `FleetMemberMain` for `startFleet` (./harness.ts). It issues its
 * share of the logical requests (the indices it is given, at their arrival
 * times from the run's shared `t0`) through `createFetch` with the `staunch`
 * strategy over the store the fleet hands it, and returns what it saw as JSON.
 */

import { createFetch } from '../../fetch.js';
import type { StateStore } from '../../store/store.js';
import { LAB_ID_HEADER } from '../live/protocol.js';
import { strategyConfig } from '../strategies.js';

/** What the parent hands each member (`FleetOptions.input`). Times in ms. */
export interface FleetMemberInput {
  /** The upstream's URL. */
  url: string;
  /** Wall-clock instant (`performance.timeOrigin + performance.now()`) of the run's start. */
  t0: number;
  /** Indices of this member's logical requests, in arrival order. */
  ids: number[];
  /** Their arrival times, ms from `t0`. */
  times: number[];
  attempts: number;
  deadline: number;
  /** Independent clients in this process (round robin). */
  clients: number;
  /** ms from `t0` after which requests still running are aborted. */
  limit: number;
}

/** What a member returns: per request of `ids`, its start, end (ms from `t0`) and 0/1 success. */
export interface FleetMemberResult {
  ids: number[];
  start: number[];
  end: number[];
  ok: number[];
  /** `giveUp` reasons and error codes of the requests that failed. */
  outcomes: Record<string, number>;
  /** `storeDegraded` / `storeRecovered` events seen (the first client's). */
  degraded: number;
  recovered: number;
  /** ms this process was late for `t0` (0 if it was ready before). */
  late: number;
}

const wall = (): number => performance.timeOrigin + performance.now();

/**
 * Runs this member's share of a fleet run: `member.input` is
 * `{ members: FleetMemberInput[] }`, one entry per process, by index.
 */
export default async function fleetMember(member: {
  index: number;
  input: unknown;
  store: StateStore;
}): Promise<FleetMemberResult> {
  const input = (member.input as { members: FleetMemberInput[] }).members[member.index]!;
  const s = strategyConfig('staunch');
  const outcomes: Record<string, number> = {};
  const count = (reason: string): void => {
    outcomes[reason] = (outcomes[reason] ?? 0) + 1;
  };
  let degraded = 0;
  let recovered = 0;
  const fetches = Array.from({ length: Math.max(1, input.clients) }, (_, c) =>
    createFetch({
      store: member.store,
      retry: { attempts: input.attempts },
      timeout: { total: input.deadline },
      ...s.policies,
      on: {
        giveUp: (event) => count(event.reason),
        ...(c === 0 && {
          storeDegraded: () => {
            degraded++;
          },
          storeRecovered: () => {
            recovered++;
          },
        }),
      },
    }),
  );
  const n = input.ids.length;
  const result: FleetMemberResult = {
    ids: input.ids,
    start: new Array(n).fill(0),
    end: new Array(n).fill(0),
    ok: new Array(n).fill(0),
    outcomes,
    degraded: 0,
    recovered: 0,
    late: Math.max(0, Math.round(wall() - input.t0)),
  };
  const elapsed = (): number => wall() - input.t0;
  const controllers = new Set<AbortController>();
  let timedOut = false;
  let settled = 0;
  let done!: () => void;
  const finished = new Promise<void>((resolve) => {
    done = resolve;
  });
  const launch = (k: number): void => {
    result.start[k] = elapsed();
    const controller = new AbortController();
    controllers.add(controller);
    const fetch = fetches[k % fetches.length]!;
    const url = `${input.url}/v1/complete`;
    fetch(url, { headers: { [LAB_ID_HEADER]: String(input.ids[k]) }, signal: controller.signal })
      .then(
        async (res) => {
          await res.arrayBuffer();
          return res.status >= 200 && res.status < 300;
        },
        (error: unknown) => {
          const code = (error as { code?: unknown } | null)?.code;
          if (typeof code !== 'string' || !code.startsWith('STAUNCH_')) {
            count(timedOut ? 'lab-time-limit' : String(code ?? 'error'));
          }
          return false;
        },
      )
      .then((ok) => {
        result.end[k] = elapsed();
        result.ok[k] = ok ? 1 : 0;
        controllers.delete(controller);
        if (++settled === n) done();
      });
  };
  let next = 0;
  const tick = (): void => {
    const now = elapsed();
    while (next < n && input.times[next]! <= now) launch(next++);
    if (next < n) setTimeout(tick, Math.max(0, input.times[next]! - elapsed()));
  };
  setTimeout(tick, Math.max(0, -elapsed()));
  const limit = setTimeout(
    () => {
      timedOut = true;
      for (const c of controllers) c.abort(new Error('lab: phase time limit'));
    },
    Math.max(0, input.limit - elapsed()),
  );
  try {
    if (n > 0) await finished;
  } finally {
    clearTimeout(limit);
  }
  result.degraded = degraded;
  result.recovered = recovered;
  return result;
}
