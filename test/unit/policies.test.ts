import { describe, expect, it } from 'vitest';
import type { PolicyWorker } from '../../src/core/policies/policy.ts';
import { createPolicy, registeredPolicies } from '../../src/core/policies/registry.ts';
import { testPolicyContext } from '../support/policy-context.ts';

const workers = (n: number): PolicyWorker[] =>
  Array.from({ length: n }, (_, i) => ({
    id: `w${i}`,
    url: `http://127.0.0.1:${8000 + i}`,
    load: 0,
    processed: 0,
  }));

const ctx = () => testPolicyContext();

describe('policy contract (every registered policy)', () => {
  for (const name of registeredPolicies()) {
    it(`${name} only picks among the candidates it is given`, () => {
      const policy = createPolicy(name, ctx());
      const all = workers(5);
      for (let i = 0; i < 200; i++) {
        const candidates = all.filter((_, j) => (i + j) % 3 !== 0);
        const picked = policy.select(candidates, {});
        expect(candidates).toContain(picked);
      }
    });

    it(`${name} picks the only candidate when there is one`, () => {
      const policy = createPolicy(name, ctx());
      const [only] = workers(1);
      expect(policy.select([only as PolicyWorker], {})).toBe(only);
    });
  }
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
});
