/**
 * What staunch's undici handlers hand on as a bare `Agent` does: 1xx
 * responses, the context interceptors below pass up, and `compose` on a
 * staunch agent. Each compares against a bare undici `Agent` on the same
 * real server.
 */
import { Agent, Dispatcher, interceptors, request } from 'undici';
import { describe, expect, it } from 'vitest';
import { constantBackoff } from '../../src/retry/backoff.js';
import { createAgent, retryInterceptor } from '../../src/undici/index.js';
import { fakeClock, until } from '../helpers/clock.js';
import { httpServer, type TestServer } from '../helpers/server.js';
import { closeAfterEach, dispatchCurrent, rejection } from './support.js';

const open = closeAfterEach();
const fast = { attempts: 3, backoff: constantBackoff(0) };

async function serve(handler: Parameters<typeof httpServer>[0]): Promise<TestServer> {
  return open.add(await httpServer(handler));
}

/** The 1xx statuses `undici.request`'s `onInfo` saw, and the final status and body. */
async function withInfo(dispatcher: Dispatcher, url: string) {
  const infos: number[] = [];
  const res = await request(url, {
    dispatcher,
    onInfo: ({ statusCode }) => infos.push(statusCode),
  });
  return { infos, status: res.statusCode, body: await res.body.text() };
}

describe('1xx responses reach the caller as on a bare Agent', () => {
  it('103 Early Hints through createAgent and retryInterceptor, then the 200', async () => {
    const server = await serve((_req, res) => {
      res.writeEarlyHints({ link: '</style.css>; rel=preload' });
      res.end('ok');
    });
    const bare = await withInfo(open.add(new Agent()), server.url);
    expect(bare).toEqual({ infos: [103], status: 200, body: 'ok' });
    expect(await withInfo(open.add(createAgent({ retry: fast })), server.url)).toEqual(bare);
    const composed = new Agent().compose(retryInterceptor({ retry: fast }));
    expect(await withInfo(open.add(composed), server.url)).toEqual(bare);
    expect(server.received).toHaveLength(3);
  });

  it('a retried attempt’s 103 reaches the caller too; the final 200 is the response', async () => {
    const server = await serve((_req, res, i) => {
      res.writeEarlyHints({ link: '</style.css>; rel=preload' });
      if (i === 0) res.writeHead(503).end('busy');
      else res.end('ok');
    });
    const got = await withInfo(open.add(createAgent({ retry: fast })), server.url);
    expect(got).toEqual({ infos: [103, 103], status: 200, body: 'ok' });
    expect(server.received).toHaveLength(2);
  });
});

describe('the context an interceptor below passes up reaches the caller', () => {
  it("undici's redirect() below retryInterceptor: its history is response.context, as without staunch", async () => {
    const server = await serve((req, res) => {
      if (req.url === '/a') res.writeHead(302, { location: '/b' }).end();
      else res.end(`at ${req.url}`);
    });
    const redirect = interceptors.redirect({ maxRedirections: 2 });
    const bare = open.add(new Agent()).compose(redirect);
    const expected = await request(`${server.url}/a`, { dispatcher: bare });
    await expected.body.text();
    const history = (expected.context as { history?: URL[] }).history?.map(String);
    expect(history).toContain(`${server.url}/a`);
    const staunch = open.add(new Agent()).compose(redirect, retryInterceptor({ retry: fast }));
    const res = await request(`${server.url}/a`, { dispatcher: staunch });
    expect(await res.body.text()).toBe('at /b');
    expect((res.context as { history?: URL[] }).history?.map(String)).toEqual(history);
    expect(server.received.map((r) => r.path)).toEqual(['/a', '/b', '/a', '/b']);
  });

  it('redirect() above createAgent: the history reaches the caller through the agent', async () => {
    const server = await serve((req, res) => {
      if (req.url === '/a') res.writeHead(302, { location: '/b' }).end();
      else res.end(`at ${req.url}`);
    });
    const agent = open.add(createAgent({ retry: fast }));
    const res = await request(`${server.url}/a`, {
      dispatcher: agent.compose(interceptors.redirect({ maxRedirections: 2 })),
    });
    expect(await res.body.text()).toBe('at /b');
    expect((res.context as { history?: URL[] }).history?.map(String)).toContain(`${server.url}/a`);
  });
});

describe('compose on a staunch agent', () => {
  it('returns a dispatcher whose close and destroy work, and close the agent', async () => {
    const server = await serve((_req, res) => res.end('ok'));
    const agent = createAgent({ retry: fast });
    const composed = agent.compose(interceptors.dump());
    const res = await request(server.url, { dispatcher: composed });
    expect(res.statusCode).toBe(200);
    await res.body.text();
    await composed.close();
    const error = (await rejection(request(server.url, { dispatcher: agent }))) as {
      cause?: { code?: string };
    };
    expect(['UND_ERR_CLOSED', 'UND_ERR_DESTROYED']).toContain(error.cause?.code);
    await composed.destroy();
    const other = createAgent().compose(interceptors.dump());
    await new Promise<void>((resolve) => other.destroy(null, resolve));
    expect(server.received).toHaveLength(1);
  });
});

describe("attempt 1's end is heard once", () => {
  for (const [name, make] of [
    [
      'createAgent',
      (clock: ReturnType<typeof fakeClock>) =>
        createAgent({
          clock,
          retry: { attempts: 3, backoff: constantBackoff(100) },
          timeout: { attempt: 5_000 },
        }),
    ],
    [
      'retryInterceptor',
      (clock: ReturnType<typeof fakeClock>) =>
        new Agent().compose(
          retryInterceptor({
            clock,
            retry: { attempts: 3, backoff: constantBackoff(100) },
            timeout: { attempt: 5_000 },
          }),
        ),
    ],
  ] as const) {
    it(`${name}: attempt 1's deadline aborts it, one backoff follows, one attempt 2 goes`, async () => {
      const server = await serve((_req, res, i) => {
        if (i > 0) res.end('second');
      });
      const clock = fakeClock();
      const dispatcher = open.add(make(clock));
      const pending = request(server.url, { dispatcher });
      await server.seen(1);
      expect(clock.remaining()).toEqual([5_000]);
      await clock.advance(5_000);
      await until(() => clock.remaining().length > 0);
      // One retry loop: one backoff sleep (two, when the abort was heard twice).
      expect(clock.remaining()).toEqual([100]);
      await clock.advance(100);
      const res = await pending;
      expect(await res.body.text()).toBe('second');
      expect(clock.remaining()).toEqual([]);
      // Attempt 1's deadline, the backoff, attempt 2's deadline.
      expect(clock.sleeps).toEqual([5_000, 100, 5_000]);
      expect(server.received).toHaveLength(2);
    });
  }
});

describe("attempts reach undici on its dispatchers' native handler API", () => {
  // undici 7's dispatchers convert a current-API handler to the legacy API (and parse its
  // headers once more); undici 8's run the current API. Which API the staunch layer hands
  // the dispatcher below it, for a caller on either API.
  const major = process.env.STAUNCH_UNDICI ?? '7';
  const native = major === '7' ? 'legacy' : 'current';

  for (const caller of ['undici.request', 'a current-API handler'] as const) {
    it(`undici ${major}: retryInterceptor hands the Agent a ${native} handler (${caller})`, async () => {
      const server = await serve((_req, res) => {
        res.setHeader('x-one', '1');
        res.end('ok');
      });
      const agent = open.add(new Agent());
      const apis: string[] = [];
      class Recording extends Dispatcher {
        override dispatch(opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler) {
          const legacy = typeof (handler as { onHeaders?: unknown }).onHeaders === 'function';
          apis.push(
            typeof handler.onRequestStart === 'function' ? 'current' : legacy ? 'legacy' : '?',
          );
          return agent.dispatch(opts, handler);
        }
      }
      const dispatcher = new Recording().compose(retryInterceptor({ retry: fast }));
      let got: { status: number; header: unknown; body: string };
      if (caller === 'undici.request') {
        const res = await request(server.url, { dispatcher });
        got = { status: res.statusCode, header: res.headers['x-one'], body: await res.body.text() };
      } else {
        const { status, headers, body } = await dispatchCurrent(dispatcher, server.url);
        got = { status, header: headers['x-one'], body };
      }
      expect(got).toEqual({ status: 200, header: '1', body: 'ok' });
      expect(apis).toEqual([native]);
      expect(server.received).toHaveLength(1);
    });
  }
});
