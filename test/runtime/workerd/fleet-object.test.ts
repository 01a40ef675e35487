/**
 * The FleetObject's own duties: state that survives a restart (registry, health, breakers, sticky
 * sessions), leases that never outlive a restart or their TTL, and the alarm's health tick.
 */
import { abortAllDurableObjects, evictDurableObject, runDurableObjectAlarm } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import type { RouteResult } from '../../../src/core/contracts/fleet-api.ts';
import { engines, freshFleet, inObject, inPool } from './helpers.ts';
import { HEALTH, REQUEST_TIMEOUT_SECS } from './router-config.ts';

/**
 * Resets the objects as a crash would: in-memory state and pending timers are gone, storage stays.
 * Not `state.abort()` from inside the object: workerd then prints "uncaught exception ...
 * broken.outputGateBroken; jsg.Error: simulated crash" with a native stack on every run, on its
 * own stderr, where no test can capture it. `abortAllDurableObjects` is the same abort without the
 * noise; it resets every object of this file's runtime, and each test here uses its own object.
 */
async function crash(): Promise<void> {
  await abortAllDurableObjects();
}

function routed(result: RouteResult) {
  if (!result.ok) throw new Error(`expected a route, got ${result.code}`);
  return result;
}

describe('FleetObject', () => {
  it('starts with the config workers probed and an alarm armed', async () => {
    const { stub, client } = freshFleet('start');
    const workers = await client.listWorkers();
    expect(workers.map((w) => [w.id, w.healthy, w.models])).toEqual([
      [engines.a, true, ['sim-model']],
      [engines.b, true, ['sim-model']],
    ]);
    const alarm = await inObject(stub, (_, state) => state.storage.getAlarm());
    expect(alarm).toBeGreaterThan(Date.now());
  });

  it('keeps the registry, health and breaker states across a restart; leases do not survive', async () => {
    const { client } = freshFleet('restart');
    await client.addWorker({ url: engines.flaky, priority: 3, circuitBreaker: { failureThreshold: 1 } });
    await client.recordProbes([{ url: engines.flaky, ok: true }]);
    const failed = routed(await client.route({ exclude: [engines.a, engines.b] }));
    expect(failed.worker.id).toBe(engines.flaky);
    await client.settle(failed.lease, { kind: 'failure', status: 500 });
    for (let i = 0; i < HEALTH.failureThreshold; i++) {
      await client.recordProbes([{ url: engines.b, ok: false, error: 'down' }]);
    }
    const held = routed(await client.route({ exclude: [engines.b, engines.flaky] }));
    expect(held.worker.id).toBe(engines.a);

    // A crash, not a graceful eviction: only what was written at once survives.
    await crash();

    expect(await client.getWorker(engines.flaky)).toMatchObject({
      circuit: 'open',
      priority: 3,
      circuitBreaker: { failureThreshold: 1 },
      healthy: true,
      processed: 1,
    });
    expect((await client.getWorker(engines.b))?.healthy).toBe(false);
    expect((await client.getWorker(engines.a))?.load).toBe(0);
    // A lease from before the restart cannot release one taken after it.
    const fresh = routed(await client.route({}));
    expect(fresh.worker.id).toBe(engines.a);
    expect(await client.settle(held.lease, { kind: 'success', status: 200 })).toBe(false);
    expect((await client.getWorker(engines.a))?.load).toBe(1);
    expect(await client.settle(fresh.lease, { kind: 'success', status: 200 })).toBe(true);
  });

  it("keeps sticky sessions across a restart (in the model's pool object)", async () => {
    const { stub, client, pool } = freshFleet('sticky');
    const sessions = Array.from({ length: 8 }, (_, i) => `session-${i}`);
    const placed = new Map<string, string>();
    for (const sessionId of sessions) {
      const r = routed(await client.route({ model: 'sim-model', sessionId }));
      placed.set(sessionId, r.worker.id);
      await client.settle(r.lease, { kind: 'success', status: 200 });
    }
    // What the soft-flush timer would do within SOFT_FLUSH_MS.
    const policies = await inPool(pool('sim-model'), (instance, state) => {
      instance.flush();
      const rows = state.storage.sql
        .exec<{ value: string }>("SELECT value FROM state WHERE key = 'fleet' ORDER BY part")
        .toArray();
      const saved = JSON.parse(rows.map((r) => r.value).join('')) as { policies: object };
      return Object.keys(saved.policies);
    });
    expect(policies.length).toBeGreaterThan(0); // the sticky policy's sessions were saved

    await evictDurableObject(pool('sim-model'));
    await evictDurableObject(stub);
    for (const sessionId of sessions) {
      const r = routed(await client.route({ model: 'sim-model', sessionId }));
      expect([sessionId, r.worker.id]).toEqual([sessionId, placed.get(sessionId)]);
      await client.settle(r.lease, { kind: 'success', status: 200 });
    }
  });

  it('reclaims a lease that was never settled once the request timeout has passed', async () => {
    const { stub, client } = freshFleet('lease');
    const lost = routed(await client.route({}));
    expect((await client.getWorker(lost.worker.id))?.load).toBe(1);
    const later = Date.now() + REQUEST_TIMEOUT_SECS * 1000 + 1000;
    await inObject(stub, (instance) => {
      instance.now = () => later;
    });
    expect((await client.getWorker(lost.worker.id))?.load).toBe(1); // nothing reclaimed it yet
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect((await client.getWorker(lost.worker.id))?.load).toBe(0);
    expect(await client.settle(lost.lease, { kind: 'success', status: 200 })).toBe(false);

    // Routing calls reclaim expired leases too (at most once a second), without waiting for the alarm.
    const second = routed(await client.route({}));
    await inObject(stub, (instance) => {
      instance.now = () => later + REQUEST_TIMEOUT_SECS * 1000 + 1000;
    });
    expect((await client.listWorkers()).every((w) => w.load === 0)).toBe(true);
    expect(await client.settle(second.lease, { kind: 'success', status: 200 })).toBe(false);
  });

  it('runs the health tick on its alarm: a failing engine turns unhealthy, and the alarm re-arms', async () => {
    const { stub, client } = freshFleet('alarm');
    await client.addWorker({ url: engines.sick });
    await client.recordProbes([{ url: engines.sick, ok: true }]);
    expect((await client.getWorker(engines.sick))?.healthy).toBe(true);
    for (let i = 0; i < HEALTH.failureThreshold; i++) expect(await runDurableObjectAlarm(stub)).toBe(true);
    const workers = await client.listWorkers();
    expect(workers.map((w) => [w.id, w.healthy])).toEqual([
      [engines.a, true],
      [engines.b, true],
      [engines.sick, false],
    ]);
    const alarm = await inObject(stub, (_, state) => state.storage.getAlarm());
    expect(alarm).toBeGreaterThan(Date.now());
  });
});
