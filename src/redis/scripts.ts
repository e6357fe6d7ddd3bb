/**
 * One Lua script per store operation, addressed by the operation's `name`.
 * Each script is the shared prelude plus the operation's body; its SHA-1 is
 * computed here, once, so that the store calls `EVALSHA` from the first
 * request on and sends the source (`EVAL`, which also caches it) only after a
 * `NOSCRIPT` reply.
 */
import { createHash } from 'node:crypto';
import { BREAKER_ADMIT, BREAKER_RECORD } from './lua/breaker.js';
import { BUDGET_DEPOSIT, BUDGET_WITHDRAW } from './lua/budget.js';
import { PRELUDE } from './lua/prelude.js';
import { RATE_ACQUIRE, RATE_FEEDBACK, RATE_REFUND } from './lua/rate.js';

/** A store operation's script: its source and the SHA-1 Redis knows it by. */
export interface LuaScript {
  /** The operation's `name` (`staunch.breaker.admit`…). */
  readonly name: string;
  readonly source: string;
  readonly sha: string;
}

function script(name: string, body: string): LuaScript {
  const source = `-- staunch: ${name}\n${PRELUDE}\n${body}`;
  return Object.freeze({ name, source, sha: createHash('sha1').update(source).digest('hex') });
}

/** The scripts by operation name. */
export const SCRIPTS: ReadonlyMap<string, LuaScript> = new Map(
  [
    script('staunch.breaker.admit', BREAKER_ADMIT),
    script('staunch.breaker.record', BREAKER_RECORD),
    script('staunch.budget.deposit', BUDGET_DEPOSIT),
    script('staunch.budget.withdraw', BUDGET_WITHDRAW),
    script('staunch.rate.acquire', RATE_ACQUIRE),
    script('staunch.rate.refund', RATE_REFUND),
    script('staunch.rate.feedback', RATE_FEEDBACK),
  ].map((s) => [s.name, s]),
);
