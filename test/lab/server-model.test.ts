import { describe, expect, it } from 'vitest';
import { retryAfterHeaders, ServerModel, type ServerOptions } from '../../src/lab/server-model.js';

const base: ServerOptions = {
  capacity: 10,
  burst: 2,
  serviceTime: 50,
  queue: 0,
  retryAfter: 'none',
  rejectCost: 0,
  outages: [],
  failureRate: 0,
};
const never = () => 0.99;

describe('ServerModel', () => {
  it('serves the burst, refuses past it, refills at the capacity', () => {
    const s = new ServerModel(base, never);
    expect([0, 0, 0].map((t) => s.arrive(t).status)).toEqual([200, 200, 429]);
    // 10/s: one token every 100 ms.
    expect(s.arrive(99).status).toBe(429);
    expect(s.arrive(100).status).toBe(200);
    expect(s.arrive(100).delay).toBe(0); // a refusal answers at once
    expect(s.arrive(300).delay).toBe(50); // a success after the service time
  });

  it('charges refusals: ten refusals at cost 0.1 eat one success', () => {
    const s = new ServerModel({ ...base, burst: 1, rejectCost: 0.1 }, never);
    expect(s.arrive(0).status).toBe(200);
    for (let i = 0; i < 10; i++) expect(s.arrive(0).status).toBe(429);
    // Without the refusals a token would be back at 100 ms; they cost one more token.
    expect(s.arrive(100).status).toBe(429);
    expect(s.arrive(199).status).toBe(429);
    expect(s.arrive(260).status).toBe(200);
  });

  it('owes at most one second of capacity to refusals', () => {
    const s = new ServerModel({ ...base, burst: 1, rejectCost: 1 }, never);
    s.arrive(0);
    for (let i = 0; i < 1000; i++) s.arrive(1);
    // Debt floor -capacity: 10 tokens, refilled in 1.1 s to one token.
    expect(s.arrive(1_100).status).toBe(429);
    expect(s.arrive(1_250).status).toBe(200);
  });

  it('queues up to `queue` requests on the next tokens, then refuses', () => {
    const s = new ServerModel({ ...base, burst: 1, queue: 2 }, never);
    expect(s.arrive(0)).toEqual({ status: 200, delay: 50, work: 50 });
    expect(s.arrive(0)).toEqual({ status: 200, delay: 150, work: 50 }); // waits 100 ms for its token
    expect(s.arrive(0)).toEqual({ status: 200, delay: 250, work: 50 });
    expect(s.arrive(0).status).toBe(429);
    // At 150 one request still waits (its token is due at 200): room for one more, due at 300.
    expect(s.arrive(150)).toEqual({ status: 200, delay: 200, work: 50 });
    expect(s.arrive(150).status).toBe(429);
  });

  it('answers 503 at once inside an outage and keeps its tokens', () => {
    const s = new ServerModel({ ...base, outages: [{ start: 100, end: 200 }] }, never);
    expect(s.arrive(100)).toEqual({ status: 503, delay: 0 });
    expect(s.arrive(199).status).toBe(503);
    expect([200, 200, 200].map((t) => s.arrive(t).status)).toEqual([200, 200, 429]);
  });

  it('fails served requests at the failure rate', () => {
    let i = 0;
    const draws = [0.01, 0.5, 0.04, 0.06];
    const s = new ServerModel({ ...base, burst: 10, failureRate: 0.05 }, () => draws[i++]!);
    expect([0, 0, 0, 0].map((t) => s.arrive(t).status)).toEqual([503, 200, 503, 200]);
  });

  it('announces the wait in Retry-After (seconds, at least 1) or retry-after-ms', () => {
    const s = new ServerModel({ ...base, burst: 1, retryAfter: 'ms' }, never);
    s.arrive(0);
    const v = s.arrive(40);
    expect(v.status).toBe(429);
    expect(v.retryAfter).toBeCloseTo(60);
    expect(retryAfterHeaders('ms', v)).toEqual({ 'retry-after-ms': '60' });
    expect(retryAfterHeaders('seconds', v)).toEqual({ 'retry-after': '1' });
    expect(retryAfterHeaders('none', v)).toEqual({});
    expect(retryAfterHeaders('seconds', { status: 429, delay: 0, retryAfter: 2_100 })).toEqual({
      'retry-after': '3',
    });
  });
});
