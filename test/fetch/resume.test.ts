/**
 * Resumable downloads against a raw node:net server that destroys the socket
 * mid-body: byte-exact bodies for cuts at random offsets, and a clear error
 * (never missing or doubled bytes) when the server cannot continue.
 */
import { randomBytes } from 'node:crypto';
import type { Socket } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { constantBackoff, createFetch, ResumeError } from '../../src/index.js';
import { rawHttpServer } from '../helpers/raw-http.js';
import type { RawServer } from '../helpers/server.js';

const BODY = randomBytes(96 * 1024);

interface Plan {
  /** Bytes of body sent on each connection before it is destroyed (absent: the rest). */
  cuts: number[];
  etag: string | undefined;
  /** ETag served from the second connection on. */
  nextEtag?: string | undefined;
  lastModified?: string;
  /** Answer range requests with the full 200. */
  ignoreRange?: boolean;
  /** Cut with a reset (destroy) instead of a FIN. */
  reset?: boolean;
  /** Start the 206 at this many bytes after the asked offset. */
  skew?: number;
}

interface Seen {
  range: string | undefined;
  ifMatch: string | undefined;
  ifRange: string | undefined;
}

let plan: Plan = { cuts: [], etag: '"v1"' };
let seen: Seen[] = [];
let server: RawServer;

function header(head: string, name: string): string | undefined {
  const m = new RegExp(`^${name}:\\s*(.*)$`, 'im').exec(head);
  return m?.[1]?.trim();
}

/** Answers the `seen.length`-th request of the test (counted by request: a runtime may open spare connections). */
function answer(socket: Socket, head: string): void {
  const request: Seen = {
    range: header(head, 'range'),
    ifMatch: header(head, 'if-match'),
    ifRange: header(head, 'if-range'),
  };
  seen.push(request);
  const index = seen.length - 1;
  const etag = index > 0 && 'nextEtag' in plan ? plan.nextEtag : plan.etag;
  const validators = [
    ...(etag === undefined ? [] : [`etag: ${etag}`]),
    ...(plan.lastModified === undefined ? [] : [`last-modified: ${plan.lastModified}`]),
  ];
  let status = '200 OK';
  let start = 0;
  const extra: string[] = [];
  const range = /^bytes=(\d+)-$/.exec(request.range ?? '');
  if (range !== null && !plan.ignoreRange) {
    if (request.ifMatch !== undefined && request.ifMatch !== etag) {
      socket.end(
        'HTTP/1.1 412 Precondition Failed\r\ncontent-length: 0\r\nconnection: close\r\n\r\n',
      );
      return;
    }
    start = Number(range[1]) + (plan.skew ?? 0);
    status = '206 Partial Content';
    extra.push(`content-range: bytes ${start}-${BODY.length - 1}/${BODY.length}`);
  }
  const rest = BODY.subarray(start);
  socket.write(
    [
      `HTTP/1.1 ${status}`,
      `content-length: ${rest.length}`,
      'content-type: application/octet-stream',
      'accept-ranges: bytes',
      'connection: close',
      ...validators,
      ...extra,
      '',
      '',
    ].join('\r\n'),
  );
  const cut = plan.cuts[index];
  if (cut === undefined || cut >= rest.length) {
    socket.end(rest);
    return;
  }
  // A FIN mid-body, or a reset (plan.reset), which may also lose the bytes still in flight.
  if (plan.reset) socket.write(rest.subarray(0, cut), () => socket.destroy());
  else socket.end(rest.subarray(0, cut));
}

beforeAll(async () => {
  server = await rawHttpServer((socket, head) => answer(socket, head));
});
afterAll(() => server.close());

function start(p: Plan): void {
  plan = p;
  seen = [];
}

const fetch = createFetch({
  resume: true,
  retry: { backoff: constantBackoff(1) },
  rateLimit: false,
  breaker: false,
});

async function download(): Promise<Buffer> {
  const res = await fetch(`${server.url}/file`);
  expect(res.status).toBe(200);
  return Buffer.from(await res.arrayBuffer());
}

describe('resume: true', () => {
  it('is byte-exact whatever the offsets of up to three cuts, FIN or reset', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 1, max: 40 * 1024 }), { minLength: 1, maxLength: 3 }),
        fc.boolean(),
        async (cuts, reset) => {
          start({ cuts, etag: '"v1"', reset });
          const body = await download();
          expect(body.equals(BODY)).toBe(true);
          // One range request per cut, with If-Match. Each starts at the bytes delivered so far:
          // never past what was sent (the fetch drops chunks still queued when its body errors,
          // and a reset drops bytes in flight, so delivered may be less than sent).
          expect(seen).toHaveLength(cuts.length + 1);
          expect(seen[0]!.range).toBeUndefined();
          let sent = 0;
          for (const [i, cut] of cuts.entries()) {
            const request = seen[i + 1]!;
            expect(request).toMatchObject({ ifMatch: '"v1"', ifRange: undefined });
            const offset = Number(/^bytes=(\d+)-$/.exec(request.range ?? '')?.[1]);
            expect(offset).toBeLessThanOrEqual(sent + cut);
            expect(offset).toBeGreaterThanOrEqual(sent);
            sent = offset;
          }
        },
      ),
      { numRuns: 30, seed: 13 },
    );
  });

  it('a changed ETag fails the body with a ResumeError (412 to If-Match), the bytes before it exact', async () => {
    start({ cuts: [10_000], etag: '"v1"', nextEtag: '"v2"' });
    const res = await fetch(`${server.url}/file`);
    const reader = res.body!.getReader();
    const got: Uint8Array[] = [];
    let error: unknown;
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        got.push(value);
      }
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ResumeError);
    expect((error as ResumeError).message).toMatch(/representation changed \(412/);
    const delivered = Buffer.concat(got);
    expect((error as ResumeError).offset).toBe(delivered.length);
    expect(delivered.length).toBeLessThanOrEqual(10_000);
    expect(delivered.equals(BODY.subarray(0, delivered.length))).toBe(true);
    expect(seen.map((s) => s.ifMatch)).toEqual([undefined, '"v1"']);
  });

  it('a server that ignores Range gives a ResumeError, never the body twice', async () => {
    start({ cuts: [5_000], etag: '"v1"', ignoreRange: true });
    const res = await fetch(`${server.url}/file`);
    await expect(res.arrayBuffer()).rejects.toThrow(/ignores Range \(200 instead of 206\)/);
    expect(seen).toHaveLength(2);
  });

  it('a 206 that starts elsewhere is refused', async () => {
    start({ cuts: [5_000], etag: '"v1"', skew: 7 });
    const res = await fetch(`${server.url}/file`);
    const error = await res.arrayBuffer().then(
      () => undefined,
      (e: unknown) => e as ResumeError,
    );
    const m = /starts at byte (\d+), not (\d+)/.exec(error?.message ?? '');
    expect(Number(m?.[1]) - Number(m?.[2])).toBe(7);
  });

  it('without a strong ETag, If-Range on Last-Modified', async () => {
    const lastModified = 'Tue, 01 Dec 2026 08:00:00 GMT';
    start({ cuts: [3_000, 4_000], etag: 'W/"weak"', lastModified });
    expect((await download()).equals(BODY)).toBe(true);
    expect(seen.slice(1)).toEqual([
      { range: expect.stringMatching(/^bytes=\d+-$/), ifMatch: undefined, ifRange: lastModified },
      { range: expect.stringMatching(/^bytes=\d+-$/), ifMatch: undefined, ifRange: lastModified },
    ]);
  });

  it('no validator at all: the failure says why it cannot resume, no range request sent', async () => {
    start({ cuts: [2_000], etag: undefined });
    const res = await fetch(`${server.url}/file`);
    const error = await res.arrayBuffer().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ResumeError);
    expect((error as Error).message).toMatch(/no strong ETag nor Last-Modified/);
    expect((error as ResumeError).cause).toBeDefined();
    expect(seen).toHaveLength(1);
  });

  it('gives up after resume.attempts range requests', async () => {
    const few = createFetch({ resume: { attempts: 2 }, rateLimit: false, breaker: false });
    start({ cuts: [1_000, 1_000, 1_000, 1_000], etag: '"v1"' });
    const res = await few(`${server.url}/file`);
    await expect(res.arrayBuffer()).rejects.toThrow(/2 range requests already made/);
    expect(seen).toHaveLength(3);
  });

  it("the caller's abort ends the body with the caller's reason, never resumed", async () => {
    start({ cuts: [], etag: '"v1"' });
    const controller = new AbortController();
    const res = await fetch(`${server.url}/file`, { signal: controller.signal });
    const reader = res.body!.getReader();
    await reader.read();
    const reason = new Error('user gave up');
    controller.abort(reason);
    await expect(
      (async () => {
        for (;;) if ((await reader.read()).done) return 'done';
      })(),
    ).rejects.toBe(reason);
    expect(seen).toHaveLength(1);
  });

  it('leaves a GET with its own Range, and other methods, alone', async () => {
    start({ cuts: [], etag: '"v1"' });
    const res = await fetch(`${server.url}/file`, { headers: { range: 'bytes=10-' } });
    expect(res.status).toBe(206);
    expect(Buffer.from(await res.arrayBuffer()).equals(BODY.subarray(10))).toBe(true);
  });

  it('rejects bad options, naming them', () => {
    expect(() => createFetch({ resume: { attempts: 0 } })).toThrow(/resume\.attempts/);
    expect(() => createFetch({ resume: { tries: 1 } as never })).toThrow(/resume\.tries/);
  });
});

/**
 * Continuations whose body disagrees with their own Content-Range: each
 * request gets the next scripted answer, written as it is and then closed.
 */
describe('a continuation hands on nothing outside its range', () => {
  let answers: string[] = [];
  let heads: string[] = [];
  let scripted: RawServer;

  beforeAll(async () => {
    scripted = await rawHttpServer((socket, head) => {
      heads.push(head);
      const answer =
        answers[heads.length - 1] ?? 'HTTP/1.1 500 Unscripted\r\ncontent-length: 0\r\n\r\n';
      socket.end(answer);
    });
  });
  afterAll(() => scripted.close());

  /** The first response: `length` bytes promised, `sent` delivered, then the connection ends. */
  function cut(length: number, sent: string, headers: string[] = ['etag: "123"']): string {
    return [
      'HTTP/1.1 200 OK',
      ...(length < 0 ? [] : [`content-length: ${length}`]),
      'connection: close',
      ...headers,
      '',
      sent,
    ].join('\r\n');
  }

  function partial(contentRange: string, body: string, headers: string[]): string {
    return [
      'HTTP/1.1 206 Partial Content',
      'etag: "123"',
      `content-range: ${contentRange}`,
      'connection: close',
      ...headers,
      '',
      body,
    ].join('\r\n');
  }

  /** Reads the body to its end or its error: the bytes handed on, and the error. */
  async function readAll(script: string[]): Promise<{ bytes: string; error: unknown }> {
    answers = script;
    heads = [];
    const res = await fetch(`${scripted.url}/users/1`);
    const reader = res.body!.getReader();
    const got: Uint8Array[] = [];
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return { bytes: Buffer.concat(got).toString('latin1'), error: undefined };
        got.push(value);
      }
    } catch (error) {
      return { bytes: Buffer.concat(got).toString('latin1'), error };
    }
  }

  const ranges = () => heads.map((h) => header(h, 'range'));

  it('undici #4970: a 206 for bytes 3-4 that carries 70 bytes hands on none of them', async () => {
    const forged = 'r1HTTP/1.1 302 Found\r\nLocation: http://evil.com\r\nContent-Length: 0\r\n\r\n';
    expect(forged).toHaveLength(70);
    const { bytes, error } = await readAll([
      cut(5, 'use'),
      partial('bytes 3-4/5', forged, [`content-length: ${forged.length}`]),
    ]);
    expect(error).toBeInstanceOf(ResumeError);
    expect((error as Error).message).toMatch(/the 206 carries 70 bytes for the 2-byte range 3-4/);
    expect(bytes).toBe('use');
    expect((error as ResumeError).offset).toBe(3);
    // No second range request from a wrong offset (undici's was `bytes=73-`, answered 416).
    expect(ranges()).toEqual([undefined, 'bytes=3-']);
  });

  it('a chunked 206 that runs past its range end: an error before the extra bytes', async () => {
    const { bytes, error } = await readAll([
      cut(5, 'use'),
      partial('bytes 3-4/5', '7\r\nrs-evil\r\n0\r\n\r\n', ['transfer-encoding: chunked']),
    ]);
    expect(error).toBeInstanceOf(ResumeError);
    expect((error as Error).message).toMatch(/the 206 runs past its range end 5/);
    expect(bytes).toBe('use');
    expect(ranges()).toEqual([undefined, 'bytes=3-']);
  });

  it('a 206 that ends short of its range: an error, never a truncated body that looks whole', async () => {
    const { bytes, error } = await readAll([
      cut(10, 'hello'),
      partial('bytes 5-9/10', '2\r\n, \r\n0\r\n\r\n', ['transfer-encoding: chunked']),
    ]);
    expect(error).toBeInstanceOf(ResumeError);
    expect((error as Error).message).toMatch(/the 206 ended at byte 7, short of its range end 10/);
    expect(bytes).toBe('hello, ');
    expect(ranges()).toEqual([undefined, 'bytes=5-']);
  });

  it('a 206 whose Content-Length is shorter than its range is refused before its bytes', async () => {
    const { bytes, error } = await readAll([
      cut(5, 'use'),
      partial('bytes 3-4/5', 'r', ['content-length: 1']),
    ]);
    expect((error as Error).message).toMatch(/carries 1 bytes for the 2-byte range 3-4/);
    expect(bytes).toBe('use');
  });

  it('a total that changes from one 206 to the next is refused', async () => {
    const { bytes, error } = await readAll([
      cut(20, 'abc'),
      partial('bytes 3-5/20', 'def', ['content-length: 3']),
      partial('bytes 6-9/30', 'ghij', ['content-length: 4']),
    ]);
    expect(error).toBeInstanceOf(ResumeError);
    expect((error as Error).message).toMatch(/a 30-byte representation, not 20/);
    expect(bytes).toBe('abcdef');
    expect(ranges()).toEqual([undefined, 'bytes=3-', 'bytes=6-']);
  });

  it('a Content-Range past its own total is refused', async () => {
    const { bytes, error } = await readAll([
      cut(5, 'use'),
      partial('bytes 3-9/5', 'rs', ['content-length: 2']),
    ]);
    expect((error as Error).message).toMatch(/not a range of its representation \(bytes 3-9\/5\)/);
    expect(bytes).toBe('use');
  });

  it('206s that each carry part of the rest, exactly framed, make the whole body', async () => {
    const { bytes, error } = await readAll([
      cut(10, 'abc'),
      partial('bytes 3-5/10', 'def', ['content-length: 3']),
      partial('bytes 6-9/10', 'ghij', ['content-length: 4']),
    ]);
    expect(error).toBeUndefined();
    expect(bytes).toBe('abcdefghij');
    expect(ranges()).toEqual([undefined, 'bytes=3-', 'bytes=6-']);
  });
});
