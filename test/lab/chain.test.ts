/**
 * The deadline chain (src/lab/live/chain.ts) on a test clock and real
 * sockets: with the time left sent down the chain, B stops its work when
 * the client's deadline passes; without it, B works on to the end.
 */
import { describe, expect, test } from 'vitest';
import { chainCommand, chainTable } from '../../src/cli/chain-command.js';
import { type ChainResult, runChain } from '../../src/lab/live/chain.js';
import { fakeClock, until } from '../helpers/clock.js';

/** Two requests whose work at B (3 s, 5 s) outlasts the client's deadline of 1 s. */
async function run(header: boolean): Promise<ChainResult> {
  const clock = fakeClock(0);
  const work = [3_000, 5_000];
  const result = runChain({
    requests: 2,
    concurrency: 2,
    deadline: 1_000,
    header,
    clock,
    work: (i) => work[i]!,
  });
  // Both requests have reached B: its two waits are on the clock.
  await until(() => clock.remaining().includes(3_000) && clock.remaining().includes(5_000));
  await clock.advance(5_000);
  return result;
}

describe('the deadline chain', () => {
  test('with the header: B stops at the client’s deadline, no work after it', async () => {
    const r = await run(true);
    expect(r).toEqual({
      header: true,
      requests: 2,
      gaveUp: 2,
      work: 2_000,
      wasted: 0,
      wastedRequests: 0,
    });
  });

  test('without it: B works on to the end, 2 s and 4 s after the client gave up', async () => {
    const r = await run(false);
    expect(r).toEqual({
      header: false,
      requests: 2,
      gaveUp: 2,
      work: 8_000,
      wasted: 6_000,
      wastedRequests: 2,
    });
  });

  test('bad options name the option and the value', async () => {
    await expect(runChain({ requests: 0 })).rejects.toThrow(RangeError);
    await expect(runChain({ requests: 0 })).rejects.toThrow(/requests .*0/);
  });
});

describe('staunch lab chain', () => {
  test('a bad flag: exit code 2 and one line naming it; --help: 0', async () => {
    const err: string[] = [];
    const out: string[] = [];
    const io = {
      out: (t: string) => out.push(t),
      err: (t: string) => err.push(t),
      errIsTty: false,
    };
    expect(await chainCommand(['--requests', '0'], io)).toBe(2);
    expect(err.join('')).toBe(
      'staunch lab chain: --requests must be an integer >= 1, got 0 (see staunch lab chain --help)\n',
    );
    expect(await chainCommand(['--help'], io)).toBe(0);
    expect(out.join('')).toMatch(/^Usage: staunch lab chain/);
  });

  test('the table states the reduction of the work after the client gave up', () => {
    const base = { requests: 10, gaveUp: 3, work: 9_000, wastedRequests: 3 };
    const text = chainTable(
      { ...base, header: false, wasted: 4_000 },
      { ...base, header: true, wasted: 100 },
    );
    expect(text).toContain('| without | 10 | 3 | 9000 | 4000 | 3 |');
    expect(text).toContain('97.5 % less with the header');
  });
});
