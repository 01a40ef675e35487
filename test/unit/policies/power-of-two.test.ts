import { describe, expect, it } from 'vitest';
import type { PolicyWorker } from '../../../src/core/policies/policy.ts';
import { createPolicy } from '../../../src/core/policies/registry.ts';
import { testPolicyContext } from '../../support/policy-context.ts';
import { makeFleet, makeWorkers, routedLease, tally, urls } from './support.ts';

/**
 * Closed simulation through the Fleet: every tick three requests arrive; a request holds its lease
 * for 10 ticks on a fast engine and 40 ticks on the slow one. Returns requests per worker.
 */
function simulate(policy: string, seed: number): { counts: Map<string, number>; slow: string } {
  const [a, b, slow] = urls(3) as [string, string, string];
  const { fleet } = makeFleet(policy, [{ url: a }, { url: b }, { url: slow }], { seed });
  const ends = new Map<number, number[]>();
  const picks: string[] = [];
  for (let tick = 0; tick < 3000; tick++) {
    for (const lease of ends.get(tick) ?? []) fleet.settle(lease, { kind: 'success', status: 200 });
    ends.delete(tick);
    for (let k = 0; k < 3; k++) {
      const { id, lease } = routedLease(fleet.route({}));
      picks.push(id);
      const done = tick + (id === slow ? 40 : 10);
      ends.set(done, [...(ends.get(done) ?? []), lease]);
    }
  }
  return { counts: tally(picks), slow };
}

describe('power_of_two', () => {
  it('sends fewer requests to a slow engine than round robin does', () => {
    const p2 = simulate('power_of_two', 3);
    const rr = simulate('round_robin', 3);
    const total = 9000;
    const p2Slow = p2.counts.get(p2.slow) ?? 0;
    const rrSlow = rr.counts.get(rr.slow) ?? 0;
    expect(rrSlow).toBe(total / 3);
    // The slow engine holds each request 4x longer: power of two sees its load and avoids it.
    expect(p2Slow).toBeLessThan(total * 0.2);
    for (const [id, n] of p2.counts) if (id !== p2.slow) expect(n).toBeGreaterThan(total * 0.35);
  });

  it('picks the less loaded of two distinct workers', () => {
    const policy = createPolicy('power_of_two', testPolicyContext({ seed: 5 }));
    const [a, b] = makeWorkers(2);
    (a as { load: number }).load = 3;
    for (let i = 0; i < 50; i++) expect(policy.select([a as PolicyWorker, b as PolicyWorker], {})).toBe(b);
  });

  it('breaks load ties by processed count, then alternates (never always the first)', () => {
    const policy = createPolicy('power_of_two', testPolicyContext({ seed: 5 }));
    const [a, b] = makeWorkers(2) as [PolicyWorker & { processed: number }, PolicyWorker];
    a.processed = 10;
    for (let i = 0; i < 20; i++) expect(policy.select([a, b], {})).toBe(b);
    a.processed = 0;
    const picks = Array.from({ length: 20 }, () => (policy.select([a, b], {}) as PolicyWorker).id);
    expect(tally(picks).get('w0')).toBe(10);
    expect(tally(picks).get('w1')).toBe(10);
  });

  it('with idle workers, still spreads over every worker (two distinct draws)', () => {
    const policy = createPolicy('power_of_two', testPolicyContext({ seed: 9 }));
    const all = makeWorkers(5);
    const counts = tally(Array.from({ length: 1000 }, () => (policy.select(all, {}) as PolicyWorker).id));
    expect(counts.size).toBe(5);
    for (const n of counts.values()) expect(n).toBeGreaterThan(120);
  });
});
