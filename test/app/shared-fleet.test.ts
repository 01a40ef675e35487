/**
 * Router replicas sharing one fleet through the real Redis, in process (the core side:
 * SharedFleet, StoreSync, StoreLink): each replica decides locally, and what one replica changes
 * or observes reaches the others through the store. Fake clocks: the sync's timers never fire, so
 * each step says when a replica writes (`settle()`), and the others are polled, bounded, until
 * they show the change.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { RouteInput, RouteResult } from '../../src/core/contracts/fleet-api.ts';
import type { StoreSyncOptions } from '../../src/core/fleet/store-sync.ts';
import { useRedis } from '../support/redis.ts';
import { configFrom, eventually, type FleetReplica, fleetReplica } from '../support/replicas.ts';

const A = 'http://a.test';
const B = 'http://b.test';
const C = 'http://c.test';
const URLS = [A, B, C];

const redis = useRedis();
const started: FleetReplica[] = [];
afterEach(() => {
  for (const r of started.splice(0)) r.fleet.sync.stop();
});

/** `n` replicas of one fleet (the three workers on the command line), each with its own store connection. */
async function replicas(
  n: number,
  flags = '',
  sync?: Partial<Omit<StoreSyncOptions, 'clock'>>,
): Promise<FleetReplica[]> {
  const config = configFrom(`--worker-urls ${URLS.join(' ')} ${flags}`);
  const out: FleetReplica[] = [];
  for (let i = 0; i < n; i++) {
    const r = await fleetReplica(config, await redis.store(), sync ? { sync } : {});
    started.push(r);
    out.push(r);
  }
  for (const r of out) probe(r, URLS, true);
  return out;
}

/** Enough probe results to flip a worker's health either way (default thresholds 3 and 2). */
function probe(r: FleetReplica, urls: readonly string[], ok: boolean): void {
  for (let i = 0; i < 3; i++)
    r.fleet.recordProbes(urls.map((url) => (ok ? { url, ok } : { url, ok, error: 'down' })));
}

function routed(result: RouteResult) {
  if (!result.ok) throw new Error(`expected a route, got ${result.code}`);
  return result;
}

/** Routes and settles at once; the worker it went to. */
async function place(r: FleetReplica, input: RouteInput = {}): Promise<string> {
  const result = routed(await r.fleet.route(input));
  r.fleet.settle(result.lease, { kind: 'success', status: 200 });
  return result.worker.id;
}

const ids = (r: FleetReplica) => r.fleet.listWorkers().map((w) => w.id);

describe('registry and admin changes', () => {
  it('an add, update, suspension and removal on one replica reach the others', async () => {
    const [a, b, c] = (await replicas(3)) as [FleetReplica, FleetReplica, FleetReplica];
    const D = 'http://d.test';
    a.fleet.addWorker({ url: D, priority: 3 });
    await a.settle();
    for (const r of [b, c])
      await eventually(() => expect(r.fleet.getWorker(D)).toMatchObject({ priority: 3 }));

    b.fleet.updateWorker(D, { priority: 5, suspended: true });
    await b.settle();
    for (const r of [a, c]) {
      await eventually(() => expect(r.fleet.getWorker(D)).toMatchObject({ priority: 5, suspended: true }));
    }

    // Removal drains where requests are in flight: `a` still sends one to D, `b` has none.
    b.fleet.updateWorker(D, { suspended: false });
    await b.settle();
    await eventually(() => expect(a.fleet.getWorker(D)?.suspended).toBeUndefined());
    probe(a, [D], true);
    const inFlight = routed(await a.fleet.route({ exclude: URLS }));
    expect(inFlight.worker.id).toBe(D);
    c.fleet.removeWorker(D);
    await c.settle();
    await eventually(() => expect(ids(b)).toEqual(URLS));
    await eventually(() => expect(a.fleet.getWorker(D)).toMatchObject({ draining: true, load: 1 }));
    expect(await place(a, { exclude: [A, B] })).toBe(C); // never to the draining worker
    a.fleet.settle(inFlight.lease, { kind: 'success', status: 200 });
    expect(ids(a)).toEqual(URLS);
  });

  it('models learned from /v1/models reach replicas that have not probed; each keeps its own reading', async () => {
    const [a, b] = (await replicas(2)) as [FleetReplica, FleetReplica];
    const learn = (r: FleetReplica, models: Record<string, string[]>) =>
      r.fleet.recordProbes(URLS.map((url) => ({ url, ok: true, models: models[url] ?? [] })));
    learn(a, { [A]: ['m1'], [B]: ['m2'], [C]: ['m1'] });
    await a.settle();
    await eventually(() => expect(b.fleet.models()).toEqual(['m1', 'm2']));
    for (let i = 0; i < 6; i++) expect(await place(b, { model: 'm2' })).toBe(B);

    // B now serves m3, and b has read it; a has not, and writes B again (an admin change).
    learn(b, { [A]: ['m1'], [B]: ['m3'], [C]: ['m1'] });
    await b.settle();
    a.fleet.updateWorker(B, { priority: 2 });
    await a.settle();
    await eventually(() => expect(b.fleet.getWorker(B)?.priority).toBe(2));
    expect(b.fleet.getWorker(B)?.models).toEqual(['m3']);
    expect((await b.fleet.route({ model: 'm2' })).ok).toBe(false);
  });

  it('a replica started later takes the registry as the others left it', async () => {
    const [a] = (await replicas(1)) as [FleetReplica];
    a.fleet.removeWorker(B);
    a.fleet.addWorker({ url: 'http://d.test' });
    await a.settle();
    const [late] = (await replicas(1)) as [FleetReplica];
    expect(ids(late)).toEqual([A, C, 'http://d.test']);
  });
});

describe('breakers and health verdicts', () => {
  it("one replica's open breaker keeps the others off that worker, until it closes again", async () => {
    const [a, b, c] = (await replicas(3, '--cb-failure-threshold 2 --cb-timeout-duration-secs 30')) as [
      FleetReplica,
      FleetReplica,
      FleetReplica,
    ];
    for (let i = 0; i < 2; i++) {
      const r = routed(await a.fleet.route({ exclude: [B, C] }));
      a.fleet.settle(r.lease, { kind: 'failure', status: 500 });
    }
    expect(a.fleet.getWorker(A)?.circuit).toBe('open');
    await a.settle();
    for (const r of [b, c]) {
      await eventually(() => expect(r.fleet.getWorker(A)?.circuit).toBe('open'));
      for (let i = 0; i < 12; i++) expect(await place(r)).not.toBe(A);
    }

    // Past the timeout, `a` lets a probe through; it succeeds and the breaker closes everywhere.
    a.clock.advance(31_000);
    for (let i = 0; i < 3 && a.fleet.getWorker(A)?.circuit !== 'closed'; i++)
      await place(a, { exclude: [B, C] });
    expect(a.fleet.getWorker(A)?.circuit).toBe('closed');
    await a.settle();
    for (const r of [b, c]) await eventually(() => expect(r.fleet.getWorker(A)?.circuit).toBe('closed'));
    const spread = new Set<string>();
    for (let i = 0; i < 12; i++) spread.add(await place(b));
    expect(spread).toContain(A);
  });

  it("one replica's health verdict holds on the others", async () => {
    const [a, b] = (await replicas(2)) as [FleetReplica, FleetReplica];
    probe(a, [B], false);
    await a.settle();
    await eventually(() => expect(b.fleet.getWorker(B)?.healthy).toBe(false));
    for (let i = 0; i < 12; i++) expect(await place(b)).not.toBe(B);
    probe(a, [B], true);
    await a.settle();
    await eventually(() => expect(b.fleet.getWorker(B)?.healthy).toBe(true));
  });
});

describe('sticky sessions', () => {
  for (const policy of ['sticky_least_loaded', 'least_loaded']) {
    it(`${policy}: replicas placing the same new sessions at once agree on each engine`, async () => {
      const all = await replicas(3, `--policy ${policy}`);
      const sessions = Array.from({ length: 40 }, (_, i) => `conversation-${i}`);
      // Each replica meets the sessions in its own order, so their local picks would differ.
      const orders = [sessions, [...sessions].reverse(), [...sessions.slice(20), ...sessions.slice(0, 20)]];
      const picks = await Promise.all(
        all.map(async (r, i) => {
          const results = await Promise.all(
            (orders[i] as string[]).map((s) => r.fleet.route({ sessionId: s })),
          );
          const out = new Map<string, string>();
          results.forEach((res, k) => {
            const ok = routed(res);
            r.fleet.settle(ok.lease, { kind: 'success', status: 200 });
            out.set((orders[i] as string[])[k] as string, ok.worker.id);
          });
          return out;
        }),
      );
      for (const s of sessions) {
        const owners = new Set(picks.map((p) => p.get(s)));
        expect(owners.size, `session ${s} placed on ${[...owners].join(', ')}`).toBe(1);
      }
      expect(new Set(picks[0]?.values()).size).toBeGreaterThan(1); // spread, not all on one engine
      // And they stay there, whichever replica the next turns go through, a new one included.
      for (const r of all) await r.settle();
      const [late] = await replicas(1, `--policy ${policy}`);
      for (const [i, s] of sessions.entries()) {
        expect(await place([...all, late][i % 4] as FleetReplica, { sessionId: s })).toBe(picks[0]?.get(s));
      }
      for (const r of all) for (const w of r.fleet.listWorkers()) expect(w.load).toBe(0);
    });
  }

  it('/finish_session on one replica releases the session on every replica', async () => {
    const [a, b] = (await replicas(2, '--policy sticky_least_loaded')) as [FleetReplica, FleetReplica];
    const x = await place(a, { sessionId: 'one' });
    // A second session forced onto the same engine: x holds two, the others none.
    expect(await place(a, { sessionId: 'two', exclude: URLS.filter((u) => u !== x) })).toBe(x);
    expect(await place(b, { sessionId: 'one' })).toBe(x);
    await b.fleet.finishSession('one');
    await b.settle();
    await eventually(() => expect(a.local.sessionOf({ sessionId: 'one' })?.known).toBe(false));
    // Placed afresh, away from x (which still holds "two"), and both replicas agree on it.
    const y = await place(a, { sessionId: 'one' });
    expect(y).not.toBe(x);
    expect(await place(b, { sessionId: 'one' })).toBe(y);
    expect(await place(b, { sessionId: 'two' })).toBe(x);
  });

  it('a session used on one replica stays alive on all; left idle past its TTL it is placed afresh', async () => {
    const ttlMs = 400;
    const [a, b] = (await replicas(2, '--policy sticky_least_loaded --sll-session-expiration-secs 1', {
      sessionTtlMs: ttlMs,
    })) as [FleetReplica, FleetReplica];
    const x = await place(a, { sessionId: 'kept' });
    expect(await place(a, { sessionId: 'other', exclude: URLS.filter((u) => u !== x) })).toBe(x);
    const pool = a.local.sessionOf({ sessionId: 'kept' })?.pool as string;
    const owner = () => redis.store().then((s) => s.sessionOwner(pool, 'kept'));
    // Used through b for longer than the store's TTL: each sync pushes its expiry.
    const until = performance.now() + 2 * ttlMs;
    while (performance.now() < until) {
      expect(await place(b, { sessionId: 'kept' })).toBe(x);
      await b.settle();
      await new Promise((resolve) => setTimeout(resolve, ttlMs / 4));
    }
    expect(await owner()).toBe(x);
    // a's own entry has expired meanwhile (its clock moved past the policy's TTL): the store answers.
    a.clock.advance(1_500);
    expect(a.local.sessionOf({ sessionId: 'kept' })?.known).toBe(false);
    expect(await place(a, { sessionId: 'kept' })).toBe(x);

    // Idle everywhere: the store forgets it after its TTL, the replicas after theirs.
    await eventually(async () => expect(await owner()).toBeUndefined());
    a.clock.advance(1_500);
    b.clock.advance(1_500);
    expect(await place(a, { sessionId: 'other', exclude: URLS.filter((u) => u !== x) })).toBe(x);
    const fresh = await place(a, { sessionId: 'kept' });
    expect(fresh).not.toBe(x);
    expect(await place(b, { sessionId: 'kept' })).toBe(fresh);
  });
});

describe('load', () => {
  it('sums in-flight requests across replicas; a replica that stops reporting drops out after the load TTL', async () => {
    const loadTtlMs = 300;
    const [a, b, c] = (await replicas(3, '', { loadTtlMs })) as [FleetReplica, FleetReplica, FleetReplica];
    const hold = async (r: FleetReplica, n: number) => {
      const leases: number[] = [];
      for (let i = 0; i < n; i++) leases.push(routed(await r.fleet.route({ exclude: [B, C] })).lease);
      return leases;
    };
    await hold(a, 3); // never settled: this replica is about to die
    const onB = await hold(b, 2);
    // Twice round: every replica reports its load, then every replica reads the others'.
    for (const r of [a, b, c, a, b, c]) await r.settle();
    const loadOf = (r: FleetReplica) => r.fleet.getWorker(A)?.load;
    expect(loadOf(c)).toBe(5);
    expect(loadOf(b)).toBe(5);
    expect(loadOf(a)).toBe(5);

    a.fleet.sync.stop(); // a crash: no more reports, nothing closed, nothing settled
    await eventually(async () => {
      await b.settle(); // b lives on: it keeps reporting
      await c.settle();
      expect(loadOf(c)).toBe(2);
    });
    for (const lease of onB) b.fleet.settle(lease, { kind: 'success', status: 200 });
    await b.settle();
    await eventually(async () => {
      await c.settle();
      expect(loadOf(c)).toBe(0);
    });
  });
});
