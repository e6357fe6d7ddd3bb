/** close and destroy of staunch/undici's dispatchers after runs of faults, on real servers. */
import { Agent, request } from 'undici';
import { describe, expect, it } from 'vitest';
import { constantBackoff } from '../../src/retry/backoff.js';
import { createAgent, retryInterceptor } from '../../src/undici/index.js';
import { httpServer, type TestServer } from '../helpers/server.js';
import { closeAfterEach } from './support.js';

const open = closeAfterEach();
const MB = Buffer.alloc(1024 * 1024, 'x');

/** A server that stalls, resets or answers a 1 MB 503 by turns, and counts each kind. */
async function faulty(): Promise<TestServer & { kinds: Record<string, number> }> {
  const kinds: Record<string, number> = { stall: 0, reset: 0, big503: 0, ok: 0 };
  const server = await httpServer((req, res, index) => {
    const kind = (['stall', 'reset', 'big503', 'ok'] as const)[index % 4]!;
    kinds[kind]!++;
    if (kind === 'stall') return;
    if (kind === 'reset') req.socket.destroy();
    else if (kind === 'big503') res.writeHead(503, { 'content-length': MB.length }).end(MB);
    else res.end('ok');
  });
  return Object.assign(open.add(server), { kinds });
}

/** Whether `p` settles within `ms` (a bound for a loaded machine, not a measured duration). */
async function settles(p: Promise<unknown>, ms = 10_000): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([p.then(() => true), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Fires `n` GETs and reads every body; returns how many ended with a response. */
async function storm(
  dispatcher: Parameters<typeof request>[1] extends infer O
    ? O extends { dispatcher?: infer D }
      ? D
      : never
    : never,
  url: string,
  n: number,
): Promise<number> {
  const results = await Promise.allSettled(
    Array.from({ length: n }, async (_, i) => {
      const { body, statusCode } = await request(`${url}/${i}`, { dispatcher });
      await body.arrayBuffer();
      return statusCode;
    }),
  );
  return results.filter((r) => r.status === 'fulfilled').length;
}

const policies = {
  rateLimit: 'adaptive' as const,
  retry: { attempts: 3, backoff: constantBackoff(5) },
  timeout: { attempt: 300, total: 2_000 },
};

describe('close and destroy after a run of faults', () => {
  it('createAgent: close settles after stalls, resets and 1 MB 503s, with the limiter on', async () => {
    const server = await faulty();
    const agent = createAgent({ ...policies, connections: 6 });
    const answered = await storm(agent, server.url, 48);
    expect(server.kinds.stall).toBeGreaterThan(0);
    expect(server.kinds.reset).toBeGreaterThan(0);
    expect(server.kinds.big503).toBeGreaterThan(0);
    expect(answered).toBeGreaterThan(0);
    expect(await settles(agent.close())).toBe(true);
  });

  it('retryInterceptor: close settles after the same run', async () => {
    const server = await faulty();
    const agent = new Agent({ connections: 6 });
    const composed = agent.compose(retryInterceptor(policies));
    await storm(composed, server.url, 48);
    expect(await settles(agent.close())).toBe(true);
  });
});
