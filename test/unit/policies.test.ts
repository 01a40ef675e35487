import { describe, expect, it, vi } from 'vitest';
import type { RouteInput } from '../../src/core/contracts/fleet-api.ts';
import type { PolicyWorker } from '../../src/core/policies/policy.ts';
import { decisionsCounter } from '../../src/core/policies/policy-metrics.ts';
import { createPolicy, policyNeeds, registeredPolicies } from '../../src/core/policies/registry.ts';
import { testPolicyContext } from '../support/policy-context.ts';
import { makeFleet, metricValue, routedId, urls } from './policies/support.ts';

const workers = (n: number): PolicyWorker[] =>
  Array.from({ length: n }, (_, i) => ({
    id: `w${i}`,
    url: `http://127.0.0.1:${8000 + i}`,
    load: 0,
    processed: 0,
  }));

const ctx = () => testPolicyContext();

/** A varied request: every policy finds what it reads (text, routing key, session id). */
const inputFor = (i: number): RouteInput => ({
  text: `system: you are assistant ${i % 5}\nuser: question ${i % 17}\n`,
  routingKey: `user-${i % 11}`,
  sessionId: `session-${i % 13}`,
});

describe('policy contract (every registered policy)', () => {
  it('registers every policy of the design', () => {
    expect(new Set(registeredPolicies())).toEqual(
      new Set([
        'round_robin',
        'random',
        'power_of_two',
        'consistent_hash',
        'rendezvous_hash',
        'cache_aware',
        'least_loaded',
        'sticky_least_loaded',
      ]),
    );
  });

  for (const name of registeredPolicies()) {
    it(`${name} only picks among the candidates it is given`, () => {
      const policy = createPolicy(name, ctx());
      const all = workers(5);
      for (let i = 0; i < 300; i++) {
        const candidates = all.filter((_, j) => (i + j) % 3 !== 0);
        const picked = policy.select(candidates, inputFor(i));
        expect(candidates).toContain(picked);
      }
    });

    it(`${name} picks the only candidate when there is one`, () => {
      const policy = createPolicy(name, ctx());
      const [only] = workers(1);
      for (let i = 0; i < 5; i++) expect(policy.select([only as PolicyWorker], inputFor(i))).toBe(only);
    });

    it(`${name} through the Fleet: never an unhealthy or excluded worker`, () => {
      const [a, b, c, d] = urls(4) as [string, string, string, string];
      const { fleet } = makeFleet(name, [{ url: a }, { url: b }, { url: c }, { url: d }]);
      fleet.setWorkerHealth(b, false);
      const seen = new Set<string>();
      for (let i = 0; i < 200; i++) {
        const id = routedId(fleet.route({ ...inputFor(i), exclude: [c] }));
        expect([a, d]).toContain(id);
        seen.add(id);
      }
      // Sessions and hashes that lived on a worker move when it goes: the survivors serve them.
      fleet.setWorkerHealth(b, true);
      fleet.setWorkerHealth(a, false);
      for (let i = 0; i < 50; i++)
        expect(routedId(fleet.route({ ...inputFor(i), exclude: [d] }))).not.toBe(a);
      expect(seen.size).toBeGreaterThan(0);
    });

    it(`${name} through the Fleet: the only eligible worker, then none`, () => {
      const [a, b, c] = urls(3) as [string, string, string];
      const { fleet } = makeFleet(name, [{ url: a }, { url: b }, { url: c }]);
      fleet.setWorkerHealth(a, false);
      for (let i = 0; i < 20; i++) expect(routedId(fleet.route({ ...inputFor(i), exclude: [b] }))).toBe(c);
      fleet.setWorkerHealth(c, false);
      expect(fleet.route({ ...inputFor(1), exclude: [b] })).toMatchObject({
        ok: false,
        code: 'no_available_workers',
      });
      const empty = makeFleet(name, []).fleet;
      expect(empty.route(inputFor(2))).toMatchObject({ ok: false, code: 'no_available_workers' });
    });

    it(`${name} through the Fleet: a removed worker is never picked again`, () => {
      const [a, b, c] = urls(3) as [string, string, string];
      const { fleet } = makeFleet(name, [{ url: a }, { url: b }, { url: c }]);
      for (let i = 0; i < 30; i++) routedId(fleet.route(inputFor(i)));
      // Leases are held, so removal drains; a draining worker is not a candidate either.
      fleet.removeWorker(b);
      for (let i = 0; i < 60; i++) expect(routedId(fleet.route(inputFor(i)))).not.toBe(b);
    });

    it(`${name} counts its decisions per worker`, async () => {
      const context = ctx();
      const policy = createPolicy(name, context);
      const all = workers(3);
      const picks = Array.from(
        { length: 12 },
        (_, i) => (policy.select(all, inputFor(i)) as PolicyWorker).id,
      );
      let total = 0;
      for (const w of all) {
        const n = await metricValue(context.metrics, 'vllm_router_policy_decisions_total', {
          policy: name,
          worker: w.id,
        });
        expect(n).toBe(picks.filter((id) => id === w.id).length);
        total += n;
      }
      expect(total).toBe(12);
    });
  }
});

describe('policy needs', () => {
  it('parses only what the configured policies read', () => {
    expect(policyNeeds(['round_robin', 'power_of_two'])).toEqual({
      text: false,
      routingKey: false,
      sessionId: false,
    });
    expect(policyNeeds(['cache_aware'])).toEqual({ text: true, routingKey: false, sessionId: false });
    expect(policyNeeds(['consistent_hash'])).toEqual({ text: true, routingKey: true, sessionId: false });
    expect(policyNeeds(['rendezvous_hash'])).toEqual({ text: true, routingKey: true, sessionId: false });
    expect(policyNeeds(['sticky_least_loaded', 'round_robin'])).toEqual({
      text: false,
      routingKey: false,
      sessionId: true,
    });
    expect(policyNeeds(['least_loaded', 'cache_aware'])).toEqual({
      text: true,
      routingKey: false,
      sessionId: true,
    });
  });
});

describe('round_robin', () => {
  it('spreads 30 requests over 3 workers 10 each, in order', () => {
    const policy = createPolicy('round_robin', ctx());
    const all = workers(3);
    const counts = new Map<string, number>();
    const order: string[] = [];
    for (let i = 0; i < 30; i++) {
      const w = policy.select(all, {}) as PolicyWorker;
      order.push(w.id);
      counts.set(w.id, (counts.get(w.id) ?? 0) + 1);
    }
    expect([...counts.values()]).toEqual([10, 10, 10]);
    expect(order.slice(0, 6)).toEqual(['w0', 'w1', 'w2', 'w0', 'w1', 'w2']);
  });
});

describe('random', () => {
  it('is reproducible with a seeded random and covers every worker', () => {
    const all = workers(4);
    const run = () => {
      const policy = createPolicy('random', ctx());
      return Array.from({ length: 400 }, () => (policy.select(all, {}) as PolicyWorker).id);
    };
    const first = run();
    expect(run()).toEqual(first);
    for (const w of all) {
      const n = first.filter((id) => id === w.id).length;
      expect(n).toBeGreaterThan(60);
      expect(n).toBeLessThan(140);
    }
  });
});

describe('registry', () => {
  it('refuses an unknown or unavailable policy instead of falling back', () => {
    expect(() => createPolicy('nope', ctx())).toThrow(/not available/);
  });

  it("looks a worker's decision series up once, then counts on it", async () => {
    const context = ctx();
    const labels = vi.spyOn(decisionsCounter(context.metrics), 'labels');
    const policy = createPolicy('round_robin', context);
    const all = workers(2);
    for (let i = 0; i < 10; i++) policy.select(all, inputFor(i));
    expect(labels).toHaveBeenCalledTimes(2);
    for (const w of all) {
      const labelled = { policy: 'round_robin', worker: w.id };
      expect(await metricValue(context.metrics, 'vllm_router_policy_decisions_total', labelled)).toBe(5);
    }
  });
});
