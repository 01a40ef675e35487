/** The exchange: everything that must happen exactly once per request, and the deadline and abort wiring. */
import { describe, expect, it } from 'vitest';
import { runAttempts } from '../../../src/core/routing/attempts.ts';
import { Exchange } from '../../../src/core/routing/exchange.ts';
import { driveClock } from '../../support/fake-clock.ts';
import { routedTo, scriptedFleet, statusUpstream, testCall, testContext } from './context.ts';

describe('Exchange.finish', () => {
  it('releases the permit, settles the lease and counts the request once, however often it is called', async () => {
    const fleet = scriptedFleet([routedTo('a', 1)]);
    const { ctx, metrics } = testContext({ fleet: fleet.fleet, upstream: statusUpstream([200]).upstream });
    let releases = 0;
    const ex = new Exchange(ctx, testCall({ release: () => void releases++ }));
    ex.lease = 9;
    ex.finish(200, { kind: 'success', status: 200 });
    ex.finish(200, { kind: 'success', status: 200 });
    ex.finish(499, { kind: 'aborted' }, 'client_disconnected');
    expect(releases).toBe(1);
    expect(fleet.settled).toEqual([{ lease: 9, outcome: { kind: 'success', status: 200 } }]);
    const text = await metrics.render();
    expect(text).toContain(
      'vllm_router_requests_total{route="/v1/chat/completions",method="POST",status="200",model="other"} 1',
    );
    expect(text).not.toContain('status="499"');
  });

  it('clears its deadline timer when finished', () => {
    const fleet = scriptedFleet([routedTo('a', 1)]);
    const { ctx, clock } = testContext({ fleet: fleet.fleet, upstream: statusUpstream([200]).upstream });
    const ex = new Exchange(ctx, testCall());
    expect(clock.pendingTimers).toBe(1);
    ex.finish(200, undefined);
    expect(clock.pendingTimers).toBe(0);
  });

  it('a client that leaves aborts the engine signal as "client gone"', () => {
    const fleet = scriptedFleet([routedTo('a', 1)]);
    const { ctx } = testContext({ fleet: fleet.fleet, upstream: statusUpstream([200]).upstream });
    const client = new AbortController();
    const ex = new Exchange(ctx, testCall({ clientSignal: client.signal }));
    client.abort();
    expect(ex.signal.aborted).toBe(true);
    expect(ex.clientGone).toBe(true);
    expect(ex.timedOut).toBe(false);
  });

  it('the deadline aborts the engine signal as timed out', () => {
    const fleet = scriptedFleet([routedTo('a', 1)]);
    const { ctx, clock } = testContext({
      fleet: fleet.fleet,
      upstream: statusUpstream([200]).upstream,
      config: { server: { requestTimeoutSecs: 2 } },
    });
    const ex = new Exchange(ctx, testCall());
    clock.advance(2000);
    expect(ex.timedOut).toBe(true);
    expect(ex.remainingMs()).toBe(0);
  });
});

describe('runAttempts over the steps', () => {
  it('503, 503, then 200 on one worker: two settled failures, the third lease is the answer', async () => {
    const fleet = scriptedFleet([routedTo('a', 1), routedTo('a', 2), routedTo('a', 3)]);
    const { upstream, calls } = statusUpstream([503, 503, 200]);
    const { ctx, clock } = testContext({ fleet: fleet.fleet, upstream });
    const ex = new Exchange(ctx, testCall());
    const result = await driveClock(
      clock,
      runAttempts(ex, {
        input: { model: 'm' },
        target: '/v1/chat/completions',
        headers: {},
        body: testCall().body,
      }),
    );
    expect(result).toMatchObject({ kind: 'response', lease: 3, res: { status: 200 } });
    expect(calls).toHaveLength(3);
    expect(fleet.settled.map((s) => s.lease)).toEqual([1, 2]);
    expect(ex.attempts).toBe(3);
  });

  it('the client leaving during a backoff ends the leg as aborted', async () => {
    const fleet = scriptedFleet([routedTo('a', 1)]);
    const { ctx } = testContext({ fleet: fleet.fleet, upstream: statusUpstream([503]).upstream });
    const client = new AbortController();
    const ex = new Exchange(ctx, testCall({ clientSignal: client.signal }));
    const pending = runAttempts(ex, { input: {}, target: '/x', headers: {}, body: null });
    await new Promise((resolve) => setImmediate(resolve));
    client.abort();
    expect(await pending).toEqual({ kind: 'aborted' });
  });
});
