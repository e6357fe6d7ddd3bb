/**
 * A Redis that refuses scripts: `EVAL`/`EVALSHA` renamed away
 * (`rename-command EVAL ""`), forbidden by an ACL, or absent (Valkey without
 * its Lua module). The store cannot work there, so it goes local, says why
 * once, and checks again now and then, further apart each time: a refused
 * script costs Redis a round trip, and nothing changes until an operator acts.
 */
import { createHash } from 'node:crypto';
import type { RedisScriptClient } from './client.js';

/** The store's cause when Redis refuses scripts; its message names it: `scripting-disabled (…)`. */
export class ScriptingDisabledError extends Error {}

/**
 * The replies that mean "no scripts here": Redis 7 and Valkey quote the
 * unknown command with `'`, Redis 6 with a backtick; an ACL answers `NOPERM`.
 */
const REFUSALS = [
  /^ERR unknown command [`']?(?:eval|evalsha)(?:_ro)?[`']?(?:,|\s|$)/i,
  /^NOPERM\b.*[`'](?:eval|evalsha)(?:_ro)?[`']/i,
];

/** The refusal behind `error`, as the store reports it, or `undefined` for any other error. */
export function scriptingRefusal(error: unknown): ScriptingDisabledError | undefined {
  if (!(error instanceof Error)) return undefined;
  const { message } = error;
  if (!REFUSALS.some((pattern) => pattern.test(message))) return undefined;
  // Redis goes on with the command's first arguments: the key and the decision stay out of the event.
  const head = message.split(',', 1)[0]?.trim() ?? message;
  return new ScriptingDisabledError(`scripting-disabled (${head})`);
}

/** Re-checks are at most this far apart, however many failed. */
export const RECHECK_MAX = 60_000;

/**
 * The wait before the re-check that follows `failed` failed ones:
 * `probeInterval` doubled each time, up to {@link RECHECK_MAX} (or
 * `probeInterval`, if longer).
 */
export function recheckDelay(probeInterval: number, failed: number): number {
  return Math.min(probeInterval * 2 ** failed, Math.max(probeInterval, RECHECK_MAX));
}

/** A script that touches no key: scripting works if it runs. */
const NOOP = "return 'ok'";
const NOOP_SHA = createHash('sha1').update(NOOP).digest('hex');

/** Resolves if Redis runs scripts (the no-op by SHA, its source after `NOSCRIPT`); rejects otherwise. */
export async function scriptsRun(client: RedisScriptClient): Promise<void> {
  try {
    await client.evalsha(NOOP_SHA, 0);
  } catch (error) {
    if (!(error instanceof Error && error.message.startsWith('NOSCRIPT'))) throw error;
    await client.eval(NOOP, 0);
  }
}
