import { describe, expect, it } from 'vitest';
import type { RouteResult, WorkerSpec } from '../../src/core/contracts/fleet-api.ts';
import { Fleet, type FleetOptions } from '../../src/core/fleet/fleet.ts';
import { FakeClock } from '../support/fake-clock.ts';
import { testPolicyContext } from '../support/policy-context.ts';

function makeFleet(workers: WorkerSpec[], overrides: Partial<FleetOptions> = {}) {
  const clock = new FakeClock();
  const fleet = new Fleet({
    policies: { regular: 'round_robin', prefill: 'round_robin', decode: 'round_robin' },
    policyContext: { ...testPolicyContext({ clock, seed: 1 }) },
    clock,
    leaseTtlMs: 60_000,
    workers,
    ...overrides,
  });
  return { fleet, clock };
}

function routed(result: RouteResult) {
  if (!result.ok) throw new Error(`expected a route, got ${result.code}`);
  return result;
}

const A = 'http://127.0.0.1:8001';
const B = 'http://127.0.0.1:8002';
const C = 'http://127.0.0.1:8003';

describe('Fleet leases', () => {
  it('takes a lease per route and releases it exactly once', () => {
    const { fleet } = makeFleet([{ url: A }]);
    const r = routed(fleet.route({}));
    expect(fleet.listWorkers()[0]?.load).toBe(1);
    expect(fleet.settle(r.lease, { kind: 'success', status: 200 })).toBe(true);
    expect(fleet.settle(r.lease, { kind: 'success', status: 200 })).toBe(false);
    expect(fleet.listWorkers()[0]?.load).toBe(0);
    expect(fleet.listWorkers()[0]?.processed).toBe(1);
    expect(fleet.inFlight).toBe(0);
  });

  it('reclaims leases whose holder never settled once they expire', () => {
    const { fleet, clock } = makeFleet([{ url: A }], { leaseTtlMs: 1000 });
    const r = routed(fleet.route({}));
    clock.advance(999);
    expect(fleet.expireLeases()).toBe(0);
    clock.advance(1);
    expect(fleet.expireLeases()).toBe(1);
    expect(fleet.listWorkers()[0]?.load).toBe(0);
    expect(fleet.settle(r.lease, { kind: 'success' })).toBe(false);
  });
});

describe('Fleet model pools', () => {
  it('routes a model only to workers serving it', () => {
    const { fleet } = makeFleet([
      { url: A, models: ['llama'] },
      { url: B, models: ['qwen'] },
    ]);
    for (let i = 0; i < 4; i++) expect(routed(fleet.route({ model: 'qwen' })).worker.url).toBe(B);
    for (let i = 0; i < 4; i++) expect(routed(fleet.route({ model: 'llama' })).worker.url).toBe(A);
  });

  it('answers model_not_found with the served models', () => {
    const { fleet } = makeFleet([
      { url: A, models: ['llama'] },
      { url: B, models: ['qwen'] },
    ]);
    expect(fleet.route({ model: 'gpt-9' })).toEqual({
      ok: false,
      code: 'model_not_found',
      models: ['llama', 'qwen'],
    });
    expect(fleet.models()).toEqual(['llama', 'qwen']);
  });

  it('lets workers whose models are unknown serve any model, without a pool per unknown name', () => {
    const { fleet } = makeFleet([{ url: A, models: ['llama'] }, { url: B }]);
    expect(routed(fleet.route({ model: 'anything' })).worker.url).toBe(B);
    const llama = new Set([0, 1, 2, 3].map(() => routed(fleet.route({ model: 'llama' })).worker.url));
    expect(llama).toEqual(new Set([A, B]));
  });

  it('says no_available_workers when the fleet is empty', () => {
    const { fleet } = makeFleet([]);
    expect(fleet.route({ model: 'm' })).toMatchObject({ ok: false, code: 'no_available_workers' });
    expect(fleet.route({})).toMatchObject({ ok: false, code: 'no_available_workers' });
  });

  it('learns models later (from /v1/models)', () => {
    const { fleet } = makeFleet([{ url: A }]);
    fleet.setWorkerModels(A, ['m1']);
    expect(fleet.route({ model: 'm2' })).toMatchObject({
      ok: false,
      code: 'model_not_found',
      models: ['m1'],
    });
    expect(routed(fleet.route({ model: 'm1' })).worker.url).toBe(A);
  });
});

describe('Fleet eligibility', () => {
  it('never routes to an excluded or unhealthy worker', () => {
    const { fleet } = makeFleet([{ url: A }, { url: B }, { url: C }]);
    fleet.setWorkerHealth(B, false);
    for (let i = 0; i < 20; i++) {
      const r = routed(fleet.route({ exclude: [A] }));
      expect(r.worker.url).toBe(C);
    }
    expect(fleet.route({ exclude: [A, C] })).toMatchObject({ ok: false, code: 'no_available_workers' });
  });

  it('drains a removed worker: no new requests, gone once its last lease settles', () => {
    const { fleet } = makeFleet([{ url: A }, { url: B }]);
    const first = routed(fleet.route({}));
    expect(fleet.removeWorker(first.worker.id)).toBe(true);
    expect(fleet.listWorkers().find((w) => w.id === first.worker.id)?.draining).toBe(true);
    for (let i = 0; i < 5; i++) expect(routed(fleet.route({})).worker.id).not.toBe(first.worker.id);
    fleet.settle(first.lease, { kind: 'success' });
    expect(fleet.listWorkers().map((w) => w.id)).not.toContain(first.worker.id);
    expect(fleet.removeWorker('http://nope:1')).toBe(false);
  });

  it('refuses a duplicate worker and an invalid URL', () => {
    const { fleet } = makeFleet([{ url: A }]);
    expect(() => fleet.addWorker({ url: `${A}/` })).toThrow(/already exists/);
    expect(() => fleet.addWorker({ url: 'ftp://x' })).toThrow(/http/);
    expect(() => fleet.addWorker({ url: 'not a url' })).toThrow(/invalid worker URL/);
  });

  it('identifies data-parallel ranks as url@rank and reports the rank', () => {
    const { fleet } = makeFleet([
      { url: A, dpRank: 0 },
      { url: A, dpRank: 1 },
    ]);
    const seen = [0, 1].map(() => routed(fleet.route({})).worker);
    expect(seen).toEqual([
      { id: `${A}@0`, url: A, dpRank: 0 },
      { id: `${A}@1`, url: A, dpRank: 1 },
    ]);
  });

  it('fails at construction when a policy is not available, naming it', () => {
    expect(() =>
      makeFleet([{ url: A }], {
        policies: { regular: 'no_such_policy', prefill: 'random', decode: 'random' },
      }),
    ).toThrow(/policy no_such_policy is not available/);
  });
});

const OPENS_ON_FIRST_FAILURE = {
  failureThreshold: 1,
  successThreshold: 1,
  timeoutDurationSecs: 60,
  windowDurationSecs: 60,
  disabled: false,
};

describe('Fleet persistence', () => {
  it('restores workers, models, health and breaker state from its exported JSON', () => {
    const { fleet, clock } = makeFleet([{ url: A, models: ['m'] }, { url: B }], {
      breaker: OPENS_ON_FIRST_FAILURE,
    });
    fleet.setWorkerModels(B, ['m']);
    fleet.updateWorker(A, { priority: 2 });
    const r = routed(fleet.route({ exclude: [B] }));
    fleet.settle(r.lease, { kind: 'failure', status: 500 });
    expect(fleet.getWorker(A)?.circuit).toBe('open');
    const saved = JSON.parse(JSON.stringify(fleet.exportState()));

    const { fleet: restored } = makeFleet([], {
      clock,
      breaker: OPENS_ON_FIRST_FAILURE,
    });
    restored.restoreState(saved);
    expect(restored.listWorkers().map((w) => [w.id, w.circuit, w.priority, w.models])).toEqual([
      [A, 'open', 2, ['m']],
      [B, 'closed', undefined, ['m']],
    ]);
    expect(routed(restored.route({ model: 'm' })).worker.url).toBe(B); // A's circuit is still open
  });
});
