import { describe, expect, it } from 'vitest';
import type { RouterConfig } from '../../../src/core/config/schema.ts';
import type { Policy, PolicyWorker } from '../../../src/core/policies/policy.ts';
import { createPolicy } from '../../../src/core/policies/registry.ts';
import { FakeClock } from '../../support/fake-clock.ts';
import { testPolicyContext } from '../../support/policy-context.ts';
import { makeFleet, makeWorkers, metricValue, routedId, tally, urls } from './support.ts';

function sll(sllSettings: Partial<RouterConfig['sll']> = {}) {
  const clock = new FakeClock();
  const ctx = testPolicyContext({ clock, sll: sllSettings });
  return { policy: createPolicy('sticky_least_loaded', ctx), clock, metrics: ctx.metrics };
}

const go = (p: Policy, ws: readonly PolicyWorker[], sessionId?: string) =>
  (p.select(ws, sessionId === undefined ? {} : { sessionId }) as PolicyWorker).id;

const SEC = 1000;

describe('sticky_least_loaded: placement', () => {
  it('spreads 60 new sessions over 3 workers 20 each, and each session sticks', () => {
    const { policy } = sll();
    const ws = makeWorkers(3);
    const placed = new Map<string, string>();
    for (let i = 0; i < 60; i++) placed.set(`s${i}`, go(policy, ws, `s${i}`));
    expect([...tally(placed.values()).values()]).toEqual([20, 20, 20]);
    for (const [id, w] of placed) expect(go(policy, ws, id)).toBe(w);
  });

  it('does the same through the Fleet with 60 concurrent requests holding their leases', async () => {
    const { fleet, metrics } = makeFleet(
      'sticky_least_loaded',
      urls(3).map((url) => ({ url })),
    );
    const results = await Promise.all(
      Array.from({ length: 60 }, (_, i) => Promise.resolve(fleet.route({ sessionId: `conv-${i}` }))),
    );
    const counts = tally(results.map(routedId));
    expect([...counts.values()]).toEqual([20, 20, 20]);
    expect(fleet.inFlight).toBe(60);
    for (const w of urls(3)) {
      expect(await metricValue(metrics, 'vllm_router_sll_active_sessions', { worker: w })).toBe(20);
      expect(await metricValue(metrics, 'vllm_router_sll_pinned_sessions', { worker: w })).toBe(20);
    }
  });

  it('breaks ties by rendezvous hash of the session id (same answer in every instance)', () => {
    const ws = makeWorkers(4);
    const a = sll().policy;
    const b = sll().policy;
    for (let i = 0; i < 8; i++) expect(go(a, ws, `first-${i}`)).toBe(go(b, [...ws].reverse(), `first-${i}`));
  });

  it('sticks even when its worker is busier, while new sessions go to the least active', () => {
    const { policy } = sll();
    const ws = makeWorkers(2);
    const home = go(policy, ws, 'alpha');
    for (const w of ws) if (w.id === home) w.load = 50;
    expect(go(policy, ws, 'alpha')).toBe(home);
    expect(go(policy, ws, 'beta')).not.toBe(home);
  });

  it('routes requests without a session id to the least active worker, rotating, recording nothing', async () => {
    const { policy, metrics } = sll();
    const ws = makeWorkers(3);
    const home = go(policy, ws, 'alpha');
    const anon = Array.from({ length: 20 }, () => go(policy, ws));
    expect(anon).not.toContain(home);
    expect(tally(anon).size).toBe(2);
    let pinned = 0;
    for (const w of ws)
      pinned += await metricValue(metrics, 'vllm_router_sll_pinned_sessions', { worker: w.id });
    expect(pinned).toBe(1);
  });

  it('moves a session whose worker became ineligible, on its next request', () => {
    const { fleet } = makeFleet(
      'sticky_least_loaded',
      urls(3).map((url) => ({ url })),
    );
    const home = routedId(fleet.route({ sessionId: 'alpha' }));
    fleet.setWorkerHealth(home, false);
    const moved = routedId(fleet.route({ sessionId: 'alpha' }));
    expect(moved).not.toBe(home);
    fleet.setWorkerHealth(home, true);
    // It now lives on its new worker: no flapping back.
    expect(routedId(fleet.route({ sessionId: 'alpha' }))).toBe(moved);
  });

  it("releases a removed worker's sessions", async () => {
    const { fleet, metrics } = makeFleet(
      'sticky_least_loaded',
      urls(2).map((url) => ({ url })),
    );
    const ids = Array.from({ length: 6 }, (_, i) => `s${i}`);
    const homes = ids.map((id) => {
      const r = fleet.route({ sessionId: id });
      if (!r.ok) throw new Error('no route');
      fleet.settle(r.lease, { kind: 'success' });
      return r.worker.id;
    });
    const gone = homes[0] as string;
    fleet.removeWorker(gone);
    expect(await metricValue(metrics, 'vllm_router_sll_pinned_sessions', { worker: gone })).toBe(0);
    for (const id of ids) expect(routedId(fleet.route({ sessionId: id }))).not.toBe(gone);
  });
});

describe('sticky_least_loaded: finish_session', () => {
  it('releases the session in every pool, idempotently', async () => {
    const [a, b, c, d] = urls(4) as [string, string, string, string];
    const { fleet, metrics } = makeFleet('sticky_least_loaded', [
      { url: a, models: ['m1'] },
      { url: b, models: ['m1'] },
      { url: c, models: ['m2'] },
      { url: d, models: ['m2'] },
    ]);
    routedId(fleet.route({ model: 'm1', sessionId: 'conv' }));
    routedId(fleet.route({ model: 'm2', sessionId: 'conv' }));
    const pinned = async () => {
      let n = 0;
      for (const w of [a, b, c, d])
        n += await metricValue(metrics, 'vllm_router_sll_pinned_sessions', { worker: w });
      return n;
    };
    expect(await pinned()).toBe(2);
    fleet.finishSession('conv');
    expect(await pinned()).toBe(0);
    fleet.finishSession('conv');
    fleet.finishSession('never-seen');
    expect(await pinned()).toBe(0);
  });
});

describe('sticky_least_loaded: caps', () => {
  it('routes a 9-byte id with an 8-byte limit without tracking it', async () => {
    const { policy, metrics } = sll({ maxSessionIdBytes: 8 });
    const ws = makeWorkers(2);
    go(policy, ws, '12345678');
    go(policy, ws, '123456789');
    go(policy, ws, 'éééé'); // 4 characters, 8 bytes: tracked
    go(policy, ws, 'ééééé'); // 10 bytes: not tracked
    let pinned = 0;
    for (const w of ws)
      pinned += await metricValue(metrics, 'vllm_router_sll_pinned_sessions', { worker: w.id });
    expect(pinned).toBe(2);
  });

  it('routes new sessions without affinity beyond max sessions; known ones still stick', async () => {
    const { policy, metrics } = sll({ maxSessions: 3 });
    const ws = makeWorkers(3);
    const homes = ['a', 'b', 'c'].map((id) => go(policy, ws, id));
    // Beyond the cap: least active (all equal) rotating; nothing recorded.
    const extra = Array.from({ length: 6 }, () => go(policy, ws, 'd'));
    expect(tally(extra).size).toBeGreaterThan(1);
    let pinned = 0;
    for (const w of ws)
      pinned += await metricValue(metrics, 'vllm_router_sll_pinned_sessions', { worker: w.id });
    expect(pinned).toBe(3);
    ['a', 'b', 'c'].forEach((id, i) => {
      expect(go(policy, ws, id)).toBe(homes[i]);
    });
    policy.finishSession?.('a');
    const home = go(policy, ws, 'd');
    expect(go(policy, ws, 'd')).toBe(home);
  });
});

describe('sticky_least_loaded: expiry and active window', () => {
  it('forgets a session idle for the expiration, and keeps one that keeps coming', async () => {
    const { policy, clock, metrics } = sll({ sessionExpirationSecs: 100 });
    const ws = makeWorkers(2);
    // The busy session comes first: expiry must follow last access, not creation order.
    const busyHome = go(policy, ws, 'busy');
    const idleHome = go(policy, ws, 'idle');
    expect(idleHome).not.toBe(busyHome);
    clock.advance(60 * SEC);
    expect(go(policy, ws, 'busy')).toBe(busyHome);
    clock.advance(40 * SEC); // idle: 100 s, busy: 40 s
    go(policy, ws); // any request ages the table
    expect(await metricValue(metrics, 'vllm_router_sll_pinned_sessions', { worker: idleHome })).toBe(0);
    expect(await metricValue(metrics, 'vllm_router_sll_pinned_sessions', { worker: busyHome })).toBe(1);
    clock.advance(99 * SEC);
    expect(go(policy, ws, 'busy')).toBe(busyHome);
  });

  it('counts only sessions seen within the active window as load, but keeps idle ones pinned', async () => {
    const { policy, clock, metrics } = sll({ sessionExpirationSecs: 600, activeWindowSecs: 30 });
    const ws = makeWorkers(2);
    const ids = ['s0', 's1', 's2', 's3'];
    const homes = new Map(ids.map((id) => [id, go(policy, ws, id)]));
    const [x, y] = [ws[0] as PolicyWorker, ws[1] as PolicyWorker];
    const onX = ids.filter((id) => homes.get(id) === x.id);
    const onY = ids.filter((id) => homes.get(id) === y.id);
    expect(onX.length).toBe(2);
    clock.advance(31 * SEC);
    // Only Y's sessions are active again: new sessions go to X until it has as many active.
    for (const id of onY) expect(go(policy, ws, id)).toBe(y.id);
    expect(await metricValue(metrics, 'vllm_router_sll_active_sessions', { worker: x.id })).toBe(0);
    expect(await metricValue(metrics, 'vllm_router_sll_pinned_sessions', { worker: x.id })).toBe(2);
    expect(go(policy, ws, 'n0')).toBe(x.id);
    expect(go(policy, ws, 'n1')).toBe(x.id);
    // An idle session returning is still pinned to its worker.
    for (const id of onX) expect(go(policy, ws, id)).toBe(x.id);
    expect(await metricValue(metrics, 'vllm_router_sll_active_sessions', { worker: x.id })).toBe(4);
  });
});

describe('sticky_least_loaded: bounded rebalancing', () => {
  /** 10 sessions placed while only `a` was eligible, then `b` joins. */
  function imbalanced(sllSettings: Partial<RouterConfig['sll']>) {
    const t = sll(sllSettings);
    const [a, b] = makeWorkers(2) as [PolicyWorker, PolicyWorker];
    const ids = Array.from({ length: 10 }, (_, i) => `s${i}`);
    for (const id of ids) expect(go(t.policy, [a], id)).toBe(a.id);
    return { ...t, a, b, ids };
  }

  it('never moves a session while the ratio is off (0)', () => {
    const { policy, clock, a, b, ids } = imbalanced({ rebalanceRatio: 0 });
    clock.advance(600 * SEC);
    for (let round = 0; round < 5; round++) {
      for (const id of ids) expect(go(policy, [a, b], id)).toBe(a.id);
      clock.advance(60 * SEC);
    }
  });

  it('moves one session per 30 s, only past the 5 min cooldown, until within ratio or 4 apart', async () => {
    const { policy, clock, metrics, a, b, ids } = imbalanced({ rebalanceRatio: 1.5 });
    // Within the cooldown (sessions placed < 5 min ago): nothing moves.
    clock.advance(299 * SEC);
    for (const id of ids) expect(go(policy, [a, b], id)).toBe(a.id);
    clock.advance(1 * SEC);
    // 10 vs 0: one move, then none for 30 s.
    const moves: string[] = [];
    const sweep = () => {
      for (const id of ids) if (go(policy, [a, b], id) === b.id && !moves.includes(id)) moves.push(id);
    };
    sweep();
    expect(moves.length).toBe(1);
    clock.advance(29 * SEC);
    sweep();
    expect(moves.length).toBe(1);
    // Every 30 s one more: 9/1 -> 8/2 -> 7/3 (7 > 1.5 x 3 and 4 apart) -> 6/4, then 6 > 6 is false.
    for (let i = 0; i < 6; i++) {
      clock.advance(30 * SEC);
      sweep();
    }
    expect(moves.length).toBe(4);
    expect(await metricValue(metrics, 'vllm_router_sll_rebalances_total', { from: a.id, to: b.id })).toBe(4);
    // Moved sessions stick to their new worker.
    for (const id of moves) expect(go(policy, [a, b], id)).toBe(b.id);
  });

  it('needs the ratio strictly exceeded and at least 4 sessions apart', () => {
    // 3 vs 0 exceeds any ratio but is only 3 apart: no move.
    const t = sll({ rebalanceRatio: 1 });
    const [a, b] = makeWorkers(2) as [PolicyWorker, PolicyWorker];
    for (const id of ['x', 'y', 'z']) go(t.policy, [a], id);
    t.clock.advance(600 * SEC);
    for (const id of ['x', 'y', 'z']) expect(go(t.policy, [a, b], id)).toBe(a.id);
    // 8 vs 4 with ratio 2: 8 > 8 is false, no move; a 9th session on a makes it 9 > 8.
    const u = sll({ rebalanceRatio: 2 });
    const ids = Array.from({ length: 8 }, (_, i) => `a${i}`);
    for (const id of ids) go(u.policy, [a], id);
    for (let i = 0; i < 4; i++) go(u.policy, [b], `b${i}`);
    u.clock.advance(600 * SEC);
    for (const id of ids) expect(go(u.policy, [a, b], id)).toBe(a.id);
    for (let i = 0; i < 4; i++) expect(go(u.policy, [a, b], `b${i}`)).toBe(b.id);
    go(u.policy, [a], 'a8');
    u.clock.advance(300 * SEC);
    expect(go(u.policy, [a, b], 'a0')).toBe(b.id);
  });
});

describe('sticky sessions across a restart', () => {
  it('restores the session table from its snapshot', () => {
    const workers = ['a', 'b', 'c'].map((id) => ({ id, url: `http://${id}`, load: 0, processed: 0 }));
    const before = createPolicy('sticky_least_loaded', testPolicyContext());
    const placed = new Map<string, string | undefined>();
    for (let i = 0; i < 9; i++) placed.set(`s${i}`, before.select(workers, { sessionId: `s${i}` })?.id);
    const saved = JSON.parse(JSON.stringify(before.snapshot?.()));
    const after = createPolicy('sticky_least_loaded', testPolicyContext());
    after.restore?.(saved);
    // Reversed order: a fresh table would place these differently.
    for (const id of [...placed.keys()].reverse()) {
      expect(after.select(workers, { sessionId: id })?.id).toBe(placed.get(id));
    }
  });
});
