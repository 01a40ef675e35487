import { describe, expect, it } from 'vitest';
import { RouterError } from '../../../src/core/contracts/errors.ts';
import type { PolicyWorker } from '../../../src/core/policies/policy.ts';
import { createPolicy } from '../../../src/core/policies/registry.ts';
import { FakeClock } from '../../support/fake-clock.ts';
import { testPolicyContext } from '../../support/policy-context.ts';
import { makeFleet, makeWorkers, routedId, tally, urls } from './support.ts';

const go = (p: ReturnType<typeof createPolicy>, ws: readonly PolicyWorker[], sessionId: string) =>
  (p.select(ws, { sessionId }) as PolicyWorker).id;

describe('least_loaded', () => {
  it('refuses a request without a session id with a 503 that says how to send one', () => {
    const policy = createPolicy('least_loaded', testPolicyContext());
    let err: unknown;
    try {
      policy.select(makeWorkers(2), {});
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(RouterError);
    const e = err as RouterError;
    expect(e.code).toBe('session_required');
    expect(e.status).toBe(503);
    expect(e.type).toBe('service_unavailable_error');
    expect(e.message).toMatch(/least_loaded/);
    expect(e.message).toMatch(/X-Session-ID/);
    expect(e.message).toMatch(/session_id/);
  });

  it('names the configured --session-key in the refusal', () => {
    const policy = createPolicy(
      'least_loaded',
      testPolicyContext({ settings: { sessionKey: 'x-conversation' } }),
    );
    expect(() => policy.select(makeWorkers(2), {})).toThrow(/x-conversation/);
  });

  it('the refusal reaches the caller through the Fleet', () => {
    const { fleet } = makeFleet(
      'least_loaded',
      urls(2).map((url) => ({ url })),
    );
    expect(() => fleet.route({})).toThrow(RouterError);
    expect(fleet.inFlight).toBe(0);
  });

  it('places new sessions on the worker with the fewest sessions, whatever the in-flight load', () => {
    const policy = createPolicy('least_loaded', testPolicyContext());
    const ws = makeWorkers(3);
    (ws[0] as { load: number }).load = 40;
    const homes = new Map(Array.from({ length: 30 }, (_, i) => [`s${i}`, go(policy, ws, `s${i}`)]));
    expect([...tally(homes.values()).values()]).toEqual([10, 10, 10]);
    for (const [id, home] of homes) expect(go(policy, ws, id)).toBe(home);
  });

  it("frees a finished session's slot; finishing twice is harmless", () => {
    const policy = createPolicy('least_loaded', testPolicyContext());
    const ws = makeWorkers(2);
    const a = go(policy, ws, 'a');
    const b = go(policy, ws, 'b');
    expect(a).not.toBe(b);
    policy.finishSession?.('a');
    policy.finishSession?.('a');
    expect(go(policy, ws, 'c')).toBe(a);
    expect(go(policy, ws, 'd')).not.toBe(a);
  });

  it('forgets sessions after the session expiration', () => {
    const clock = new FakeClock();
    const policy = createPolicy(
      'least_loaded',
      testPolicyContext({ clock, sll: { sessionExpirationSecs: 10 } }),
    );
    const [x, y] = makeWorkers(2) as [PolicyWorker, PolicyWorker];
    go(policy, [x], 'a1');
    go(policy, [x], 'a2');
    go(policy, [y], 'b');
    clock.advance(6_000);
    expect(go(policy, [x, y], 'b')).toBe(y.id);
    // Unexpired, x holds 2 sessions and y 1: a new one would go to y.
    clock.advance(4_000);
    // a1 and a2 are idle for 10 s and expire; b (idle 4 s) stays: x now holds none.
    expect(go(policy, [x, y], 'c')).toBe(x.id);
    expect(go(policy, [x, y], 'b')).toBe(y.id);
  });

  it('moves a session off an unhealthy worker', () => {
    const { fleet } = makeFleet(
      'least_loaded',
      urls(2).map((url) => ({ url })),
    );
    const home = routedId(fleet.route({ sessionId: 'x' }));
    fleet.setWorkerHealth(home, false);
    expect(routedId(fleet.route({ sessionId: 'x' }))).not.toBe(home);
  });
});
