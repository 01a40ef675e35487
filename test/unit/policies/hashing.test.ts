import { describe, expect, it } from 'vitest';
import { HashRing, VIRTUAL_NODES } from '../../../src/core/policies/consistent-hash.ts';
import { hash32, hash53 } from '../../../src/core/policies/hash.ts';
import type { Policy, PolicyWorker } from '../../../src/core/policies/policy.ts';
import { createPolicy } from '../../../src/core/policies/registry.ts';
import { testPolicyContext } from '../../support/policy-context.ts';
import { makeFleet, makeWorkers, routedId, tally, urls } from './support.ts';

const keys = (n: number, prefix = 'user') => Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
const pick = (p: Policy, ws: readonly PolicyWorker[], routingKey: string) =>
  (p.select(ws, { routingKey }) as PolicyWorker).id;

describe('hash', () => {
  it('is deterministic and spreads similar keys over the whole range', () => {
    expect(hash32('session-1')).toBe(hash32('session-1'));
    expect(hash32('session-1')).not.toBe(hash32('session-2'));
    expect(hash32('abc', 1)).not.toBe(hash32('abc', 2));
    const buckets = new Array(16).fill(0);
    for (const k of keys(16_000)) buckets[hash32(k) >>> 28]++;
    for (const b of buckets) expect(Math.abs(b - 1000)).toBeLessThan(150);
    const wide = keys(2000).map((k) => hash53(k));
    expect(new Set(wide).size).toBe(2000);
    for (const h of wide) expect(Number.isSafeInteger(h) && h >= 0).toBe(true);
  });

  it('flips about half the output bits for a one-character change (avalanche)', () => {
    let flips = 0;
    const n = 2000;
    for (const k of keys(n)) {
      let x = (hash32(k) ^ hash32(`${k}x`)) >>> 0;
      while (x) {
        flips += x & 1;
        x >>>= 1;
      }
    }
    expect(flips / n).toBeGreaterThan(14);
    expect(flips / n).toBeLessThan(18);
  });
});

describe('consistent_hash', () => {
  const policy = () => createPolicy('consistent_hash', testPolicyContext());

  it('maps the same key to the same worker, and keys evenly over workers', () => {
    const p = policy();
    const ws = makeWorkers(4);
    for (const k of keys(50)) {
      const first = pick(p, ws, k);
      for (let i = 0; i < 5; i++) expect(pick(p, ws, k)).toBe(first);
    }
    const counts = tally(keys(8000).map((k) => pick(p, ws, k)));
    // 160 virtual nodes per worker: within ±20 % of the fair share.
    for (const n of counts.values()) expect(Math.abs(n - 2000)).toBeLessThan(400);
  });

  it('ignores load: the key owner is kept even when it is busy', () => {
    const p = policy();
    const ws = makeWorkers(3);
    const owner = pick(p, ws, 'user-7');
    for (const w of ws) if (w.id === owner) w.load = 100;
    expect(pick(p, ws, 'user-7')).toBe(owner);
  });

  it('falls over clockwise when the owner is ineligible, and comes back when it recovers', () => {
    const all = urls(4);
    const { fleet } = makeFleet(
      'consistent_hash',
      all.map((url) => ({ url })),
    );
    const before = new Map(keys(2000).map((k) => [k, routedId(fleet.route({ routingKey: k }))]));
    const down = all[0] as string;
    fleet.setWorkerHealth(down, false);
    // The ring still holds the down worker: each of its keys goes to its own ring successor.
    const ring = new HashRing();
    for (const u of all) ring.add(u);
    const movedTo = new Set<string>();
    for (const [k, owner] of before) {
      const now = routedId(fleet.route({ routingKey: k }));
      if (owner === down) {
        expect(now).toBe(ring.lookup(k, (id) => id !== down));
        movedTo.add(now);
      } else {
        expect(now).toBe(owner);
      }
    }
    // Successors spread over the remaining workers (not "the first healthy worker").
    expect(movedTo.size).toBe(3);
    fleet.setWorkerHealth(down, true);
    for (const [k, owner] of before) expect(routedId(fleet.route({ routingKey: k }))).toBe(owner);
  });

  it('an excluded owner (retry after a transport failure) falls over the same way', () => {
    const all = urls(3);
    const { fleet } = makeFleet(
      'consistent_hash',
      all.map((url) => ({ url })),
    );
    const owner = routedId(fleet.route({ routingKey: 'session-x' }));
    const next = routedId(fleet.route({ routingKey: 'session-x', exclude: [owner] }));
    expect(next).not.toBe(owner);
    expect(routedId(fleet.route({ routingKey: 'session-x', exclude: [owner] }))).toBe(next);
  });

  it('moves about 1/n of the keys when a worker joins, all of them to the new worker', () => {
    const all = urls(5);
    const { fleet } = makeFleet(
      'consistent_hash',
      all.slice(0, 4).map((url) => ({ url })),
    );
    const ks = keys(10_000);
    const before = ks.map((k) => routedId(fleet.route({ routingKey: k })));
    fleet.addWorker({ url: all[4] as string });
    let moved = 0;
    ks.forEach((k, i) => {
      const now = routedId(fleet.route({ routingKey: k }));
      if (now !== before[i]) {
        moved++;
        expect(now).toBe(all[4]);
      }
    });
    expect(moved / ks.length).toBeGreaterThan(0.14);
    expect(moved / ks.length).toBeLessThan(0.26);
  });

  it('forgets a removed worker: its keys move, the others stay', () => {
    const all = urls(4);
    const { fleet } = makeFleet(
      'consistent_hash',
      all.map((url) => ({ url })),
    );
    const ks = keys(1000);
    const owners = ks.map((k) => {
      const r = fleet.route({ routingKey: k });
      if (!r.ok) throw new Error('no route');
      fleet.settle(r.lease, { kind: 'success' });
      return r.worker.id;
    });
    const gone = all[2] as string;
    expect(owners).toContain(gone);
    expect(fleet.removeWorker(gone)).toBe(true);
    ks.forEach((k, i) => {
      const now = routedId(fleet.route({ routingKey: k }));
      if (owners[i] === gone) expect(now).not.toBe(gone);
      else expect(now).toBe(owners[i]);
    });
  });

  it('hashes the routing text when there is no key, and balances when there is neither', () => {
    const p = policy();
    const ws = makeWorkers(4);
    const text = 'system: be brief\nuser: hello\n';
    const first = (p.select(ws, { text }) as PolicyWorker).id;
    for (let i = 0; i < 10; i++) expect((p.select(ws, { text }) as PolicyWorker).id).toBe(first);
    const counts = tally(Array.from({ length: 40 }, () => (p.select(ws, {}) as PolicyWorker).id));
    expect([...counts.values()]).toEqual([10, 10, 10, 10]);
  });

  it('builds the same ring in every instance (160 virtual nodes per worker)', () => {
    expect(VIRTUAL_NODES).toBe(160);
    const a = policy();
    const b = policy();
    const ws = makeWorkers(6);
    for (const k of keys(300)) expect(pick(a, ws, k)).toBe(pick(b, [...ws].reverse(), k));
  });
});

describe('rendezvous_hash', () => {
  const policy = () => createPolicy('rendezvous_hash', testPolicyContext());

  it('maps the same key to the same worker, evenly, whatever the candidate order', () => {
    const p = policy();
    const ws = makeWorkers(4);
    for (const k of keys(200)) expect(pick(p, ws, k)).toBe(pick(p, [...ws].reverse(), k));
    const counts = tally(keys(8000).map((k) => pick(p, ws, k)));
    for (const n of counts.values()) expect(Math.abs(n - 2000)).toBeLessThan(250);
  });

  it('moves only the keys of a worker that leaves, and about 1/n when one joins', () => {
    const p = policy();
    const ws = makeWorkers(5);
    const four = ws.slice(0, 4);
    const ks = keys(10_000);
    const before = ks.map((k) => pick(p, four, k));
    const without = four.filter((w) => w.id !== 'w1');
    ks.forEach((k, i) => {
      const now = pick(p, without, k);
      if (before[i] !== 'w1') expect(now).toBe(before[i]);
    });
    let moved = 0;
    ks.forEach((k, i) => {
      const now = pick(p, ws, k);
      if (now !== before[i]) {
        moved++;
        expect(now).toBe('w4');
      }
    });
    expect(moved / ks.length).toBeGreaterThan(0.17);
    expect(moved / ks.length).toBeLessThan(0.23);
  });
});
