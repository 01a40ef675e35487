/** The attempt loop's steps one at a time (route, send, decide), over a scripted fleet and upstream. */
import { describe, expect, it } from 'vitest';
import { RouterError } from '../../../src/core/contracts/errors.ts';
import { StaleConnectionError, type Upstream } from '../../../src/core/contracts/upstream.ts';
import { AttemptRun } from '../../../src/core/routing/attempt-run.ts';
import { sendStep } from '../../../src/core/routing/attempt-send.ts';
import { decideStep, routeStep } from '../../../src/core/routing/attempt-steps.ts';
import { Exchange } from '../../../src/core/routing/exchange.ts';
import { AttemptTracker } from '../../../src/core/routing/stall-watch.ts';
import { routedTo, scriptedFleet, statusUpstream, testCall, testContext } from './context.ts';

function runFor(
  fleet: ReturnType<typeof scriptedFleet>,
  upstream: Upstream,
  config?: Record<string, unknown>,
) {
  const { ctx } = testContext({ fleet: fleet.fleet, upstream, ...(config ? { config } : {}) });
  const call = testCall();
  const ex = new Exchange(ctx, call);
  const run = new AttemptRun(ex, {
    input: { model: 'm' },
    target: call.target,
    headers: {},
    body: call.body,
  });
  return { run, ex };
}

describe('routeStep', () => {
  it('counts the attempt and remembers the worker when the fleet routes', async () => {
    const fleet = scriptedFleet([routedTo('a', 7)]);
    const { run, ex } = runFor(fleet, statusUpstream([200]).upstream);
    expect(await routeStep(run)).toEqual({ kind: 'routed', worker: { id: 'a', url: 'http://a' }, lease: 7 });
    expect(run.tries).toBe(1);
    expect(ex.attempts).toBe(0); // counted when it reaches the engine
  });

  it('answers model_not_found with the served models, without an attempt', async () => {
    const fleet = scriptedFleet([{ ok: false, code: 'model_not_found', models: ['x', 'y'] }]);
    const { run, ex } = runFor(fleet, statusUpstream([200]).upstream);
    const next = await routeStep(run);
    expect(next).toMatchObject({ kind: 'done', result: { kind: 'error' } });
    if (next.kind !== 'done' || next.result.kind !== 'error') throw new Error('unreachable');
    expect(next.result.error.code).toBe('model_not_found');
    expect(next.result.error.message).toContain('served models: x, y');
    expect(ex.attempts).toBe(0);
  });

  it('after transport exclusions emptied the pool: resets them and waits a backoff, no attempt used', async () => {
    const fleet = scriptedFleet([{ ok: false, code: 'no_available_workers', models: [] }]);
    const { run, ex } = runFor(fleet, statusUpstream([200]).upstream);
    run.exclude.push('a', 'b');
    const next = await routeStep(run);
    expect(next).toMatchObject({ kind: 'wait', reason: 'all candidates unreachable' });
    expect(run.exclude).toEqual([]);
    expect(fleet.routed[0]?.exclude).toEqual(['a', 'b']);
    expect(ex.attempts).toBe(0);
  });

  it('with no worker available: uses an attempt and waits, until the attempts are spent', async () => {
    const fleet = scriptedFleet([{ ok: false, code: 'no_available_workers', models: [] }]);
    const { run, ex } = runFor(fleet, statusUpstream([200]).upstream, { retry: { maxRetries: 2 } });
    expect(await routeStep(run)).toMatchObject({ kind: 'wait', reason: 'no_available_workers' });
    const last = await routeStep(run);
    expect(run.tries).toBe(2);
    expect(ex.attempts).toBe(0);
    expect(last).toMatchObject({ kind: 'done', result: { kind: 'error' } });
  });
});

describe('routeStep, in memory and remote', () => {
  it('answers at once when the fleet does (no promise per request), and with a promise when it does not', async () => {
    const fleet = scriptedFleet([routedTo('a', 7)]);
    const { run } = runFor(fleet, statusUpstream([200]).upstream);
    const now = routeStep(run);
    expect(now).not.toBeInstanceOf(Promise);
    expect(now).toMatchObject({ kind: 'routed', lease: 7 });

    const remote = scriptedFleet([routedTo('b', 8)]);
    const sync = remote.fleet.route;
    remote.fleet.route = (input) => Promise.resolve(sync(input));
    const later = runFor(remote, statusUpstream([200]).upstream).run;
    const pending = routeStep(later);
    expect(pending).toBeInstanceOf(Promise);
    expect(await pending).toMatchObject({ kind: 'routed', lease: 8 });
    expect(later.tries).toBe(1);
  });

  it("a policy's refusal ends the leg with its error, thrown at once or rejected by a remote fleet", async () => {
    const refusal = new RouterError('invalid_request', 'this policy needs a session id');
    for (const route of [
      () => {
        throw refusal;
      },
      () => Promise.reject(refusal),
    ]) {
      const fleet = scriptedFleet([routedTo('a', 1)]);
      fleet.fleet.route = route;
      const { run } = runFor(fleet, statusUpstream([200]).upstream);
      expect(await routeStep(run)).toEqual({ kind: 'done', result: { kind: 'error', error: refusal } });
    }
  });

  it('any other failure of the fleet is not a routing answer: it propagates', async () => {
    const fleet = scriptedFleet([routedTo('a', 1)]);
    fleet.fleet.route = () => Promise.reject(new TypeError('object unreachable'));
    const { run } = runFor(fleet, statusUpstream([200]).upstream);
    await expect(routeStep(run)).rejects.toThrow('object unreachable');
  });
});

describe('sendStep', () => {
  it('a transport failure settles the lease as a failure, excludes the worker and reroutes at once', async () => {
    const fleet = scriptedFleet([routedTo('a', 3)]);
    const refused: Upstream = async () => {
      throw Object.assign(new TypeError('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    };
    const { run } = runFor(fleet, refused);
    await routeStep(run);
    expect(await sendStep(run, { kind: 'routed', worker: { id: 'a', url: 'http://a' }, lease: 3 })).toEqual({
      kind: 'again',
    });
    expect(fleet.settled).toEqual([{ lease: 3, outcome: { kind: 'failure' } }]);
    expect(run.exclude).toEqual(['a']);
  });

  it('resends once, free, when the pooled connection was stale', async () => {
    let calls = 0;
    const stale: Upstream = async () => {
      calls++;
      if (calls === 1) throw new StaleConnectionError('socket closed', { code: 'ECONNRESET' });
      return { status: 200, headers: {}, body: null };
    };
    const fleet = scriptedFleet([routedTo('a', 1)]);
    const { run, ex } = runFor(fleet, stale);
    await routeStep(run);
    const sent = await sendStep(run, { kind: 'routed', worker: { id: 'a', url: 'http://a' }, lease: 1 });
    expect(sent).toMatchObject({ kind: 'sent', answered: { res: { status: 200 } } });
    expect(calls).toBe(2);
    expect(ex.attempts).toBe(1);
    expect(fleet.settled).toEqual([]);
  });

  it('carries the request id, the DP rank and the engines bearer', async () => {
    const { upstream, calls } = statusUpstream([200]);
    const fleet = scriptedFleet([routedTo('a', 1)]);
    const { ctx } = testContext({ fleet: fleet.fleet, upstream });
    ctx.apiKey = 'engine-secret';
    const ex = new Exchange(ctx, testCall());
    const run = new AttemptRun(ex, { input: {}, target: '/v1/x', headers: { a: 'b' }, body: null });
    await sendStep(run, { kind: 'routed', worker: { id: 'a@1', url: 'http://a', dpRank: 1 }, lease: 1 });
    expect(calls[0]?.url).toBe('http://a/v1/x');
    expect(calls[0]?.headers).toMatchObject({
      a: 'b',
      'x-request-id': 'req-1',
      'x-data-parallel-rank': '1',
      authorization: 'Bearer engine-secret',
    });
  });
});

describe('decideStep', () => {
  const worker = { id: 'a', url: 'http://a' };
  const tracker = new AttemptTracker('a', false, 0);

  it('a non-retryable status is the answer, its lease still held', async () => {
    const fleet = scriptedFleet([routedTo('a', 1)]);
    const { run } = runFor(fleet, statusUpstream([400]).upstream);
    const res = { status: 400, headers: {}, body: null };
    const next = await decideStep(run, { worker, lease: 1, tracker, firstByteMs: 3, res });
    expect(next).toMatchObject({ kind: 'done', result: { kind: 'response', lease: 1 } });
    expect(fleet.settled).toEqual([]);
  });

  it('a retryable status and no other engine: body cancelled, lease settled, a backoff before the resend', async () => {
    const fleet = scriptedFleet([routedTo('a', 2)]);
    const { run } = runFor(fleet, statusUpstream([503]).upstream);
    run.tries = 1;
    let cancelled = false;
    const body = new ReadableStream<Uint8Array>({
      cancel: () => {
        cancelled = true;
      },
    });
    const next = await decideStep(run, {
      worker,
      lease: 1,
      tracker,
      res: { status: 503, headers: {}, body },
    });
    expect(next).toMatchObject({ kind: 'routed', lease: 2, worker: { id: 'a' } });
    expect((next as { waitMs?: number }).waitMs).toBeGreaterThan(0);
    expect(fleet.routed[0]?.avoid).toEqual(['a']);
    expect(cancelled).toBe(true);
    expect(fleet.settled).toEqual([{ lease: 1, outcome: { kind: 'failure', status: 503 } }]);
  });

  it('a retryable status with another engine available: the retry goes there at once', async () => {
    const fleet = scriptedFleet([routedTo('b', 2)]);
    const { run } = runFor(fleet, statusUpstream([429]).upstream);
    run.tries = 1;
    const res = { status: 429, headers: { 'retry-after': '1' }, body: null };
    const next = await decideStep(run, { worker, lease: 1, tracker, res });
    expect(next).toEqual({ kind: 'routed', worker: { id: 'b', url: 'http://b' }, lease: 2 });
    expect(run.avoid).toEqual(['a']);
    expect(fleet.settled).toEqual([
      { lease: 1, outcome: { kind: 'neutral', status: 429, retryAfterMs: 1000 } },
    ]);
  });

  it('Retry-After longer than the max backoff and no other engine: the response passes through', async () => {
    const fleet = scriptedFleet([routedTo('a', 2)]);
    const { run } = runFor(fleet, statusUpstream([429]).upstream, { retry: { maxBackoffMs: 1000 } });
    run.tries = 1;
    const res = { status: 429, headers: { 'retry-after': '5' }, body: null };
    expect(await decideStep(run, { worker, lease: 1, tracker, res })).toMatchObject({ kind: 'done' });
    expect(fleet.settled).toEqual([{ lease: 2, outcome: { kind: 'aborted' } }]); // the unused retry lease
  });

  it('Retry-After within the max backoff sets the wait before resending to the same engine', async () => {
    const fleet = scriptedFleet([routedTo('a', 2)]);
    const { run } = runFor(fleet, statusUpstream([503]).upstream);
    run.tries = 1;
    const res = { status: 503, headers: { 'retry-after': '2' }, body: null };
    expect(await decideStep(run, { worker, lease: 1, tracker, res })).toEqual({
      kind: 'routed',
      worker,
      lease: 2,
      waitMs: 2000,
    });
  });

  it('the last allowed attempt passes the retryable response through', async () => {
    const fleet = scriptedFleet([routedTo('b', 2)]);
    const { run } = runFor(fleet, statusUpstream([503]).upstream, { retry: { maxRetries: 2 } });
    run.tries = 2;
    const res = { status: 503, headers: {}, body: null };
    expect(await decideStep(run, { worker, lease: 1, tracker, res })).toMatchObject({ kind: 'done' });
    expect(fleet.routed).toEqual([]);
  });

  it('a streamed request body is never resent', async () => {
    const fleet = scriptedFleet([routedTo('b', 2)]);
    const { ctx } = testContext({ fleet: fleet.fleet, upstream: statusUpstream([503]).upstream });
    const ex = new Exchange(ctx, testCall());
    const run = new AttemptRun(ex, { input: {}, target: '/x', headers: {}, body: new ReadableStream() });
    run.tries = 1;
    const res = { status: 503, headers: {}, body: null };
    expect(await decideStep(run, { worker, lease: 1, tracker, res })).toMatchObject({ kind: 'done' });
  });
});

describe('one failure signal per request and engine', () => {
  it('a second failure of the same request on the same engine is recorded as neutral', () => {
    const fleet = scriptedFleet([routedTo('a', 1)]);
    const { run } = runFor(fleet, statusUpstream([503]).upstream);
    expect(run.signal('a', { kind: 'failure', status: 503 })).toEqual({ kind: 'failure', status: 503 });
    expect(run.signal('a', { kind: 'failure', status: 503 })).toEqual({ kind: 'neutral', status: 503 });
    expect(run.signal('b', { kind: 'failure' })).toEqual({ kind: 'failure' });
    expect(run.signal('a', { kind: 'success', status: 200 })).toEqual({ kind: 'success', status: 200 });
  });
});
