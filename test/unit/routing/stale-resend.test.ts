/** The free resend on a stale pooled connection: bodies under 1 MiB only (as SMG). */
import { describe, expect, it } from 'vitest';
import { StaleConnectionError, type Upstream } from '../../../src/core/contracts/upstream.ts';
import { AttemptRun } from '../../../src/core/routing/attempt-run.ts';
import { FREE_RESEND_MAX_BYTES, sendStep } from '../../../src/core/routing/attempt-send.ts';
import { routeStep } from '../../../src/core/routing/attempt-steps.ts';
import { Exchange } from '../../../src/core/routing/exchange.ts';
import { routedTo, scriptedFleet, testCall, testContext } from './context.ts';

async function sendOnce(bodyBytes: number) {
  let calls = 0;
  const stale: Upstream = async () => {
    calls++;
    if (calls === 1) throw new StaleConnectionError('socket closed', { code: 'ECONNRESET' });
    return { status: 200, headers: {}, body: null };
  };
  const fleet = scriptedFleet([routedTo('a', 1)]);
  const { ctx } = testContext({ fleet: fleet.fleet, upstream: stale });
  const call = testCall();
  const ex = new Exchange(ctx, call);
  const body = new Uint8Array(bodyBytes);
  const run = new AttemptRun(ex, { input: { model: 'm' }, target: call.target, headers: {}, body });
  await routeStep(run);
  const next = await sendStep(run, { kind: 'routed', worker: { id: 'a', url: 'http://a' }, lease: 1 });
  return { next, calls: () => calls, fleet, run };
}

describe('free resend on a stale connection', () => {
  it('is 1 MiB exactly, as SMG', () => {
    expect(FREE_RESEND_MAX_BYTES).toBe(1_048_576);
  });

  it('resends a body one byte under 1 MiB at once, with nothing recorded', async () => {
    const { next, calls, fleet } = await sendOnce(FREE_RESEND_MAX_BYTES - 1);
    expect(next.kind).toBe('sent');
    expect(calls()).toBe(2);
    expect(fleet.settled).toEqual([]);
  });

  it('does not resend a body of 1 MiB: a failed attempt, the worker excluded, a retry next', async () => {
    const { next, calls, fleet, run } = await sendOnce(FREE_RESEND_MAX_BYTES);
    expect(next).toEqual({ kind: 'again' });
    expect(calls()).toBe(1);
    expect(fleet.settled).toEqual([{ lease: 1, outcome: { kind: 'failure' } }]);
    expect(run.exclude).toEqual(['a']);
  });
});
