/**
 * The FleetApi contract, written once and run against every implementation: the in-memory
 * `Fleet` (test/contract/fleet-api.test.ts, Node) and the Durable Object client
 * (test/runtime/workerd/fleet-contract.test.ts, inside workerd). Every value crosses the seam as
 * plain data; every method is awaited, so synchronous and RPC implementations both fit.
 */
import { describe, expect, it } from 'vitest';
import {
  type FleetApi,
  type RouteResult,
  WorkerConflictError,
  type WorkerSpec,
} from '../../src/core/contracts/fleet-api.ts';

export interface FleetApiContractOptions {
  /** A fresh fleet with no workers, built from the router config of the run. */
  create(): Promise<FleetApi>;
  /** The config's health.failureThreshold / health.successThreshold. */
  health: { failureThreshold: number; successThreshold: number };
}

// Never contacted: the contract drives health through recordProbes.
const A = 'http://127.0.0.1:9';
const B = 'http://127.0.0.1:10';

function routed(result: RouteResult) {
  if (!result.ok) throw new Error(`expected a route, got ${result.code}`);
  return result;
}

/** Adds a worker and records one good probe (with probing on, new workers wait for one). */
async function addHealthy(fleet: FleetApi, spec: WorkerSpec) {
  await fleet.addWorker(spec);
  await fleet.recordProbes([{ url: spec.url, ok: true }]);
}

export function fleetApiContract(name: string, options: FleetApiContractOptions): void {
  const { create, health } = options;

  describe(`FleetApi contract: ${name}`, () => {
    it('answers no_available_workers when the fleet is empty', async () => {
      const fleet = await create();
      expect(await fleet.listWorkers()).toEqual([]);
      expect(await fleet.route({})).toEqual({ ok: false, code: 'no_available_workers', models: [] });
      const r = await fleet.route({ model: 'any' });
      expect(r.ok).toBe(false);
      expect(!r.ok && r.code).toBe('no_available_workers');
    });

    it('route takes a lease and settle releases it exactly once', async () => {
      const fleet = await create();
      await addHealthy(fleet, { url: A });
      const r = routed(await fleet.route({}));
      expect(r.worker).toMatchObject({ id: A, url: A });
      expect((await fleet.getWorker(A))?.load).toBe(1);
      expect(await fleet.settle(r.lease, { kind: 'success', status: 200 })).toBe(true);
      expect(await fleet.settle(r.lease, { kind: 'success', status: 200 })).toBe(false);
      const after = await fleet.getWorker(A);
      expect(after?.load).toBe(0);
      expect(after?.processed).toBe(1);
    });

    it('answers model_not_found listing the served models', async () => {
      const fleet = await create();
      await addHealthy(fleet, { url: A, models: ['m1'] });
      await addHealthy(fleet, { url: B, models: ['m2'] });
      const r = await fleet.route({ model: 'nope' });
      expect(r).toEqual({ ok: false, code: 'model_not_found', models: ['m1', 'm2'] });
      expect(await fleet.models()).toEqual(['m1', 'm2']);
      expect(routed(await fleet.route({ model: 'm2' })).worker.id).toBe(B);
    });

    it('respects exclusions', async () => {
      const fleet = await create();
      await addHealthy(fleet, { url: A });
      await addHealthy(fleet, { url: B });
      for (let i = 0; i < 4; i++) {
        const r = routed(await fleet.route({ exclude: [A] }));
        expect(r.worker.id).toBe(B);
        await fleet.settle(r.lease, { kind: 'success', status: 200 });
      }
      const none = await fleet.route({ exclude: [A, B] });
      expect(!none.ok && none.code).toBe('no_available_workers');
    });

    it('adds, reads, updates and removes workers', async () => {
      const fleet = await create();
      const added = await fleet.addWorker({ url: `${A}/`, models: ['m1'], priority: 1 });
      expect(added).toMatchObject({ id: A, url: A, role: 'regular', models: ['m1'], priority: 1 });
      expect(await fleet.getWorker(A)).toEqual(added);
      expect((await fleet.listWorkers()).map((w) => w.id)).toEqual([A]);
      // Through an async function, so a synchronous throw and a rejection read the same.
      await expect((async () => fleet.addWorker({ url: A }))()).rejects.toBeInstanceOf(WorkerConflictError);

      const updated = await fleet.updateWorker(A, { priority: 5, models: ['m3'] });
      expect(updated).toMatchObject({ id: A, priority: 5, models: ['m3'] });
      expect(await fleet.updateWorker(B, { priority: 1 })).toBeUndefined();
      await fleet.setWorkerModels(A, ['m4']);
      expect((await fleet.getWorker(A))?.models).toEqual(['m4']);
      expect((await fleet.snapshot()).workers.map((w) => w.id)).toEqual([A]);

      expect(await fleet.removeWorker(A)).toBe(true);
      expect(await fleet.getWorker(A)).toBeUndefined();
      expect(await fleet.removeWorker(A)).toBe(false);
      expect(await fleet.snapshot()).toEqual({ workers: [], models: [] });
    });

    it('drains a removed worker that still has a request in flight', async () => {
      const fleet = await create();
      await addHealthy(fleet, { url: A });
      const r = routed(await fleet.route({}));
      expect(await fleet.removeWorker(A)).toBe(true);
      expect(await fleet.getWorker(A)).toMatchObject({ draining: true, load: 1 });
      expect((await fleet.route({})).ok).toBe(false);
      expect(await fleet.settle(r.lease, { kind: 'success', status: 200 })).toBe(true);
      expect(await fleet.getWorker(A)).toBeUndefined();
    });

    it('finishes sessions idempotently', async () => {
      // Needs a session policy: both runs configure sticky_least_loaded, which places a new
      // session on the worker with the fewest active sessions and keeps a known one where it is.
      const fleet = await create();
      await addHealthy(fleet, { url: A });
      await addHealthy(fleet, { url: B });
      const place = async (sessionId: string, exclude?: string[]) => {
        const r = routed(await fleet.route(exclude ? { sessionId, exclude } : { sessionId }));
        expect(await fleet.settle(r.lease, { kind: 'success', status: 200 })).toBe(true);
        return r.worker.id;
      };
      const x = await place('session-1');
      const y = x === A ? B : A;
      // A second session forced onto the same worker: x has 2 active sessions, y none.
      expect(await place('session-2', [y])).toBe(x);
      // Sticky: session-1 stays on x although y has fewer sessions.
      expect(await place('session-1')).toBe(x);

      // Finished (twice, and one never seen): harmless, and session-1 is forgotten, so its next
      // request is placed afresh, on y (x still has session-2). Were it still pinned, it would
      // stick to x.
      for (const id of ['session-1', 'session-1', 'never-seen']) {
        await expect((async () => fleet.finishSession(id))()).resolves.toBeUndefined();
      }
      expect(await place('session-1')).toBe(y);
      // Only session-1 was released: session-2 still sticks to x, and session-1 now sticks to y.
      expect(await place('session-2')).toBe(x);
      expect(await place('session-1')).toBe(y);
    });

    it('flips health only after the configured thresholds of probes', async () => {
      const fleet = await create();
      await addHealthy(fleet, { url: A });
      expect((await fleet.getWorker(A))?.healthy).toBe(true);
      for (let i = 1; i < health.failureThreshold; i++) {
        await fleet.recordProbes([{ url: A, ok: false, error: 'down' }]);
        expect((await fleet.getWorker(A))?.healthy).toBe(true);
      }
      await fleet.recordProbes([{ url: A, ok: false, error: 'down' }]);
      expect((await fleet.getWorker(A))?.healthy).toBe(false);
      expect((await fleet.route({})).ok).toBe(false);
      for (let i = 1; i < health.successThreshold; i++) {
        await fleet.recordProbes([{ url: A, ok: true }]);
        expect((await fleet.getWorker(A))?.healthy).toBe(false);
      }
      await fleet.recordProbes([{ url: A, ok: true, models: ['learned'] }]);
      expect(await fleet.getWorker(A)).toMatchObject({ healthy: true, models: ['learned'] });
      expect(routed(await fleet.route({ model: 'learned' })).worker.id).toBe(A);
    });

    it('opens a worker breaker from settled failures and routes around it, never ejecting the last one', async () => {
      const fleet = await create();
      await addHealthy(fleet, { url: A, circuitBreaker: { failureThreshold: 2 } });
      await addHealthy(fleet, { url: B });
      for (let i = 0; i < 2; i++) {
        const r = routed(await fleet.route({ exclude: [B] }));
        await fleet.settle(r.lease, { kind: 'failure', status: 500 });
      }
      expect((await fleet.getWorker(A))?.circuit).toBe('open');
      for (let i = 0; i < 4; i++) {
        const r = routed(await fleet.route({}));
        expect(r.worker.id).toBe(B);
        await fleet.settle(r.lease, { kind: 'success', status: 200 });
      }
      // Panic mode: with B excluded, A is the last candidate. It is routed to anyway (its own answer
      // then passes through), as a regular request, not a probe: its breaker stays open.
      const last = routed(await fleet.route({ exclude: [B] }));
      expect(last.worker.id).toBe(A);
      await fleet.settle(last.lease, { kind: 'success', status: 200 });
      expect((await fleet.getWorker(A))?.circuit).toBe('open');
    });

    it('routes around workers the request avoids, unless one is the last', async () => {
      const fleet = await create();
      await addHealthy(fleet, { url: A });
      await addHealthy(fleet, { url: B });
      const place = async (input: { avoid: string[]; exclude?: string[] }) => {
        const r = routed(await fleet.route(input));
        await fleet.settle(r.lease, { kind: 'success', status: 200 });
        return r.worker.id;
      };
      for (let i = 0; i < 4; i++) expect(await place({ avoid: [A] })).toBe(B);
      for (let i = 0; i < 4; i++) expect(await place({ avoid: [B] })).toBe(A);
      // Soft: avoided workers still serve when nothing else is left (unlike `exclude`).
      expect(await place({ avoid: [A], exclude: [B] })).toBe(A);
      expect([A, B]).toContain(await place({ avoid: [A, B] }));
    });

    it('keeps new requests off a worker that sent Retry-After, unless it is the last', async () => {
      const fleet = await create();
      await addHealthy(fleet, { url: A });
      await addHealthy(fleet, { url: B });
      const r = routed(await fleet.route({ exclude: [B] }));
      await fleet.settle(r.lease, { kind: 'neutral', status: 429, retryAfterMs: 60_000 });
      for (let i = 0; i < 4; i++) {
        const next = routed(await fleet.route({}));
        expect(next.worker.id).toBe(B);
        await fleet.settle(next.lease, { kind: 'success', status: 200 });
      }
      const last = routed(await fleet.route({ exclude: [B] }));
      expect(last.worker.id).toBe(A);
      await fleet.settle(last.lease, { kind: 'success', status: 200 });
      expect((await fleet.getWorker(A))?.circuit).toBe('closed');
    });
  });
}
