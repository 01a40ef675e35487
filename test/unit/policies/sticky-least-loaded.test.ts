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
    expect(go(policy, ws, 'busy')).toBe(busyHome); // sweeps (60 s since the first)
    clock.advance(60 * SEC); // idle: 120 s, busy: 60 s; the next sweep is due
    go(policy, ws);
    expect(await metricValue(metrics, 'vllm_router_sll_pinned_sessions', { worker: idleHome })).toBe(0);
    expect(await metricValue(metrics, 'vllm_router_sll_pinned_sessions', { worker: busyHome })).toBe(1);
    clock.advance(30 * SEC);
    expect(go(policy, ws, 'busy')).toBe(busyHome);
  });

  it('sweeps expired sessions at most once per minute', async () => {
    const { policy, clock, metrics } = sll({ sessionExpirationSecs: 100 });
    const ws = makeWorkers(2);
    const pinned = async () => {
      let n = 0;
      for (const w of ws)
        n += await metricValue(metrics, 'vllm_router_sll_pinned_sessions', { worker: w.id });
      return n;
    };
    go(policy, ws, 'idle'); // t=0: first sweep
    clock.advance(61 * SEC);
    go(policy, ws, 'other'); // t=61: second sweep, nothing expired
    clock.advance(39 * SEC);
    go(policy, ws); // t=100: idle has expired, but the last sweep was 39 s ago
    expect(await pinned()).toBe(2);
    clock.advance(21 * SEC);
    go(policy, ws); // t=121: a minute since the last sweep
    expect(await pinned()).toBe(1);
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

  it('counts a session as load while its request is in flight, and for the window after it finished', async () => {
    const { fleet, clock, metrics } = makeFleet(
      'sticky_least_loaded',
      urls(2).map((url) => ({ url })),
      { sll: { activeWindowSecs: 3 } },
    );
    const active = (w: string) => metricValue(metrics, 'vllm_router_sll_active_sessions', { worker: w });
    const anon = () => {
      const r = fleet.route({});
      if (r.ok) fleet.settle(r.lease, { kind: 'success' });
    };
    const long = fleet.route({ sessionId: 'long' });
    if (!long.ok) throw new Error('no route');
    const home = long.worker.id;
    clock.advance(3_500);
    anon(); // ages the table
    expect(await active(home)).toBe(1); // still in flight after the 3 s window
    clock.advance(1_500);
    fleet.settle(long.lease, { kind: 'success' }); // t=5 s
    clock.advance(2_900);
    anon(); // t=7.9 s: finished 2.9 s ago
    expect(await active(home)).toBe(1);
    clock.advance(100);
    anon(); // t=8 s: 3 s since it finished
    expect(await active(home)).toBe(0);
  });

  it('reads 0, not nothing, for a worker whose sessions are gone', async () => {
    const { policy, metrics } = sll();
    const ws = makeWorkers(2);
    const home = go(policy, ws, 'only');
    const text = async () => await metrics.render();
    policy.finishSession?.('only');
    for (const name of ['vllm_router_sll_active_sessions', 'vllm_router_sll_pinned_sessions']) {
      for (const w of ws) expect(await text()).toContain(`${name}{worker="${w.id}"} 0`);
    }
    expect(home).toBeDefined();
    policy.onWorkerRemoved?.('w1');
    expect(await text()).not.toContain('worker="w1"');
  });
});

describe('sticky_least_loaded: bounded rebalancing', () => {
  /** `n` sessions placed while only `a` was eligible, then `b` joins. */
  function imbalanced(sllSettings: Partial<RouterConfig['sll']>, n = 10) {
    const t = sll(sllSettings);
    const [a, b] = makeWorkers(2) as [PolicyWorker, PolicyWorker];
    const ids = Array.from({ length: n }, (_, i) => `s${i}`);
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

  it('moves one session per 30 s, right after placement, until within ratio or under 4 apart', async () => {
    const { policy, clock, metrics, a, b, ids } = imbalanced({ rebalanceRatio: 1.5 });
    const moves: string[] = [];
    const sweep = () => {
      for (const id of ids) if (go(policy, [a, b], id) === b.id && !moves.includes(id)) moves.push(id);
    };
    sweep(); // 9 (the mover left out) vs 0: one move, no five-minute wait after placement
    expect(moves.length).toBe(1);
    clock.advance(29 * SEC);
    sweep();
    expect(moves.length).toBe(1);
    // 8 vs 1 -> move, 7 vs 2 -> move, 6 vs 3 is only 3 apart: no more.
    for (let i = 0; i < 6; i++) {
      clock.advance(30 * SEC);
      sweep();
    }
    expect(moves.length).toBe(3);
    expect(await metricValue(metrics, 'vllm_router_sll_rebalances_total', { from: a.id, to: b.id })).toBe(3);
    for (const id of moves) expect(go(policy, [a, b], id)).toBe(b.id);
  });

  it('leaves the moving session out of the comparison', () => {
    // 4 on a: the mover sees 3 vs 0, only 3 apart. 5 on a: 4 vs 0 moves.
    const four = imbalanced({ rebalanceRatio: 1.5 }, 4);
    for (const id of four.ids) expect(go(four.policy, [four.a, four.b], id)).toBe(four.a.id);
    const five = imbalanced({ rebalanceRatio: 1.5 }, 5);
    expect(go(five.policy, [five.a, five.b], 's0')).toBe(five.b.id);
    // 6 vs 2 at ratio 1: 5 vs 2, only 3 apart; with a 7th on a, 6 vs 2 moves.
    const t = sll({ rebalanceRatio: 1 });
    const [a, b] = makeWorkers(2) as [PolicyWorker, PolicyWorker];
    for (let i = 0; i < 6; i++) go(t.policy, [a], `a${i}`);
    for (let i = 0; i < 2; i++) go(t.policy, [b], `b${i}`);
    for (let i = 0; i < 6; i++) expect(go(t.policy, [a, b], `a${i}`)).toBe(a.id);
    go(t.policy, [a], 'a6');
    expect(go(t.policy, [a, b], 'a0')).toBe(b.id);
  });

  it('needs the ratio strictly exceeded', () => {
    // Ratio 2 with 4 on b: 9 on a is 8 vs 4 (8 > 8 is false); 10 on a is 9 vs 4.
    const t = sll({ rebalanceRatio: 2 });
    const [a, b] = makeWorkers(2) as [PolicyWorker, PolicyWorker];
    for (let i = 0; i < 9; i++) go(t.policy, [a], `a${i}`);
    for (let i = 0; i < 4; i++) go(t.policy, [b], `b${i}`);
    for (let i = 0; i < 9; i++) expect(go(t.policy, [a, b], `a${i}`)).toBe(a.id);
    go(t.policy, [a], 'a9');
    expect(go(t.policy, [a, b], 'a0')).toBe(b.id);
  });

  it('keeps a moved session where it is for 5 minutes; other sessions may move meanwhile', () => {
    const { policy, clock, a, b, ids } = imbalanced({ rebalanceRatio: 1.5 });
    expect(go(policy, [a, b], 's0')).toBe(b.id); // moved at t=0
    for (const id of ids.slice(1)) policy.finishSession?.(id); // a: 0 sessions
    for (let i = 0; i < 10; i++) go(policy, [b], `n${i}`); // b: 11 sessions
    clock.advance(31 * SEC);
    expect(go(policy, [a, b], 's0')).toBe(b.id); // 10 vs 0, but moved 31 s ago
    expect(go(policy, [a, b], 'n0')).toBe(a.id); // never moved: it may
    clock.advance(269 * SEC); // t=300 s
    expect(go(policy, [a, b], 's0')).toBe(a.id); // 9 vs 1 after the cooldown
  });

  it('never moves a session that has a request in flight', () => {
    const { fleet, clock } = makeFleet(
      'sticky_least_loaded',
      urls(2).map((url) => ({ url })),
      { sll: { rebalanceRatio: 1.5 } },
    );
    const [a, b] = urls(2) as [string, string];
    fleet.setWorkerHealth(b, false);
    const held = fleet.route({ sessionId: 's0' });
    if (!held.ok) throw new Error('no route');
    for (let i = 1; i < 10; i++) {
      const r = fleet.route({ sessionId: `s${i}` });
      if (r.ok) fleet.settle(r.lease, { kind: 'success' });
    }
    fleet.setWorkerHealth(b, true);
    clock.advance(301 * SEC); // past any placement cooldown (the lease lives 600 s)
    const second = fleet.route({ sessionId: 's0' }); // 9 vs 0, but s0's first request is in flight
    expect(routedId(second)).toBe(a);
    if (second.ok) fleet.settle(second.lease, { kind: 'success' });
    fleet.settle(held.lease, { kind: 'success' });
    expect(routedId(fleet.route({ sessionId: 's0' }))).toBe(b);
  });

  it('allows one voluntary move per 30 s across every pool of the router', () => {
    const [a, b, c, d] = urls(4) as [string, string, string, string];
    const { fleet, clock } = makeFleet(
      'sticky_least_loaded',
      [
        { url: a, models: ['m1'] },
        { url: b, models: ['m1'] },
        { url: c, models: ['m2'] },
        { url: d, models: ['m2'] },
      ],
      { sll: { rebalanceRatio: 1.5 } },
    );
    const call = (model: string, sessionId: string) => {
      const r = fleet.route({ model, sessionId });
      if (r.ok) fleet.settle(r.lease, { kind: 'success' });
      return routedId(r);
    };
    fleet.setWorkerHealth(b, false);
    fleet.setWorkerHealth(d, false);
    for (let i = 0; i < 10; i++) {
      call('m1', `one-${i}`);
      call('m2', `two-${i}`);
    }
    fleet.setWorkerHealth(b, true);
    fleet.setWorkerHealth(d, true);
    clock.advance(301 * SEC); // past any placement cooldown
    expect(call('m1', 'one-0')).toBe(b);
    expect(call('m2', 'two-0')).toBe(c); // the router's move of this 30 s is spent
    clock.advance(30 * SEC);
    expect(call('m2', 'two-0')).toBe(d);
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
