/**
 * The requests in flight expire their deadlines with one timer for all of them (in-flight.ts): each
 * request still times out at its own deadline, a finished one never does, and an idle router holds
 * no timer. The shutdown cut reaches every request still running.
 */
import { describe, expect, it } from 'vitest';
import { Exchange } from '../../../src/core/routing/exchange.ts';
import { InFlight } from '../../../src/core/routing/in-flight.ts';
import { FakeClock } from '../../support/fake-clock.ts';
import { routedTo, scriptedFleet, statusUpstream, testCall, testContext } from './context.ts';

function setup(timeoutSecs = 2) {
  const clock = new FakeClock();
  const inFlight = new InFlight(clock);
  const { ctx } = testContext({
    fleet: scriptedFleet([routedTo('a', 1)]).fleet,
    upstream: statusUpstream([200]).upstream,
    clock,
    inFlight,
    config: { server: { requestTimeoutSecs: timeoutSecs } },
  });
  return { clock, inFlight, open: () => new Exchange(ctx, testCall()) };
}

describe('InFlight deadlines', () => {
  it('fifty requests in flight hold one timer, not fifty', () => {
    const { clock, open } = setup();
    const exchanges = Array.from({ length: 50 }, () => open());
    expect(clock.pendingTimers).toBe(1);
    for (const ex of exchanges) ex.finish(200, undefined);
    expect(clock.pendingTimers).toBe(0);
  });

  it('each request times out at its own deadline, in the order they started', () => {
    const { clock, open } = setup(2);
    const first = open();
    clock.advance(500);
    const second = open();
    clock.advance(500);
    const third = open();
    clock.advance(999);
    expect([first.timedOut, second.timedOut, third.timedOut]).toEqual([false, false, false]);
    clock.advance(1);
    expect([first.timedOut, second.timedOut, third.timedOut]).toEqual([true, false, false]);
    clock.advance(499);
    expect(second.timedOut).toBe(false);
    clock.advance(1);
    expect([second.timedOut, third.timedOut]).toEqual([true, false]);
    clock.advance(500);
    expect(third.timedOut).toBe(true);
    expect(clock.pendingTimers).toBe(0);
  });

  it('a request that finished before its deadline is not expired; the next one still is', () => {
    const { clock, inFlight, open } = setup(2);
    const early = open();
    clock.advance(100);
    const late = open();
    early.finish(200, undefined);
    expect(inFlight.size).toBe(1);
    clock.advance(1900);
    expect(early.stopped).toBe(false);
    expect(late.timedOut).toBe(false);
    clock.advance(100);
    expect(late.timedOut).toBe(true);
    late.finish(504, undefined);
    expect(inFlight.size).toBe(0);
  });

  it('the shutdown cut stops every request in flight, and every later one, and drops the timer', () => {
    const { clock, inFlight, open } = setup();
    const running = [open(), open()];
    inFlight.stop();
    expect(running.map((ex) => ex.shutDown)).toEqual([true, true]);
    expect(clock.pendingTimers).toBe(0);
    expect(open().shutDown).toBe(true);
  });
});

describe('the idle limit of relayed answers', () => {
  it('shares one list (one timer) on a host with a list of requests in flight; a Worker keeps one per answer', () => {
    const withList = setup();
    const { ctx } = testContext({
      fleet: scriptedFleet([routedTo('a', 1)]).fleet,
      upstream: statusUpstream([200]).upstream,
    });
    const shared = testContext({
      fleet: scriptedFleet([routedTo('a', 1)]).fleet,
      upstream: statusUpstream([200]).upstream,
      clock: withList.clock,
      inFlight: withList.inFlight,
    }).ctx;
    expect(shared.idleWatch).toBeDefined();
    expect(ctx.idleWatch).toBeUndefined();
  });
});
