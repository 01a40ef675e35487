/**
 * The main object and its pool objects at the RPC level (a FleetClient on a fresh fleet): which
 * object routes what, leases settled once at the object that granted them, and how a pool object
 * catches up with the main object's registry when a push did not reach it.
 */
import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { FleetClient } from '../../../src/adapters/cloudflare/fleet-client.ts';
import { REGISTRY_MAX_AGE_MS } from '../../../src/adapters/cloudflare/pool-object.ts';
import type { RouteResult } from '../../../src/core/contracts/fleet-api.ts';
import { callsOf, engines, fleetStub, freshFleet, inPool, made, until } from './helpers.ts';

function routed(result: RouteResult) {
  if (!result.ok) throw new Error(`expected a route, got ${result.code}`);
  return result;
}

const ok = { kind: 'success', status: 200 } as const;

describe('main and pool objects', () => {
  it("keep requests without a model (or for an unknown one) in the main object; a model's go to its pool", async () => {
    const { stub, client, pool } = freshFleet('shard-route');
    const calls = async () => ({ main: await callsOf(stub), pool: await callsOf(pool('sim-model')) });

    let was = await calls();
    await client.settle(routed(await client.route({})).lease, ok);
    expect((await client.route({ model: 'nope' })).ok).toBe(false);
    let now = await calls();
    expect(made(now.main, was.main)).toMatchObject({ route: 2, settle: 1 });
    expect(made(now.pool, was.pool)).toEqual({});

    // The client learnt from those answers which models have a pool: straight there.
    was = now;
    for (let i = 0; i < 3; i++)
      await client.settle(routed(await client.route({ model: 'sim-model' })).lease, ok);
    now = await calls();
    expect(made(now.main, was.main)).toEqual({});
    expect(made(now.pool, was.pool)).toEqual({ route: 3, settle: 3 });
  });

  it('pass a pooled request on to its pool for a client that does not know it yet', async () => {
    const { stub, client, pool } = freshFleet('shard-forward');
    const was = { main: await callsOf(stub), pool: await callsOf(pool('sim-model')) };
    const r = routed(await client.route({ model: 'sim-model' }));
    await client.settle(r.lease, ok);
    expect(made(await callsOf(stub), was.main)).toEqual({ route: 1 });
    expect(made(await callsOf(pool('sim-model')), was.pool)).toEqual({ route: 1, settle: 1 });

    // A client without the pools' namespace cannot settle there: the main object routes it itself.
    const objectName = `shard-plain-${crypto.randomUUID()}`;
    const main = fleetStub(objectName);
    const plain = new FleetClient(env.FLEET, { objectName });
    const before = await callsOf(main);
    await plain.settle(routed(await plain.route({ model: 'sim-model' })).lease, ok);
    expect(made(await callsOf(main), before)).toEqual({ route: 1, settle: 1 });
  });

  it('settle each lease once, at the object that granted it; listings add the pools’ loads', async () => {
    const { client, pool } = freshFleet('shard-lease');
    await client.settle(routed(await client.route({})).lease, ok); // the client learns the pools
    const r = routed(await client.route({ model: 'sim-model' }));
    const held = await client.getWorker(r.worker.id);
    expect(held?.load).toBe(1); // held in the pool object
    const settlesBefore = (await callsOf(pool('sim-model'))).settle ?? 0;
    expect(await client.settle(r.lease, ok)).toBe(true);
    expect(await client.settle(r.lease, ok)).toBe(false); // answered by the client: no second call
    expect((await callsOf(pool('sim-model'))).settle).toBe(settlesBefore + 1);
    expect(await client.getWorker(r.worker.id)).toMatchObject({ load: 0, processed: held?.processed });
  });

  it('a pool object catches up: before routing when a caller saw a newer version, and once its copy is old', async () => {
    const { stub, client, pool } = freshFleet('shard-catch-up');
    await client.settle(routed(await client.route({})).lease, ok);
    await client.settle(routed(await client.route({ model: 'sim-model' })).lease, ok);
    const pulls = async () => (await callsOf(stub)).registry ?? 0;
    const pulled = await pulls();

    // A caller that saw a newer version than the pool's: the pool pulls before it answers.
    const reply = await pool('sim-model').route({ model: 'sim-model' }, Number.MAX_SAFE_INTEGER);
    expect(await pulls()).toBe(pulled + 1);
    if (reply.ok) await pool('sim-model').settle(reply.lease, ok);

    // An old copy: refreshed in the background, the request is not held for it.
    await client.settle(routed(await client.route({ model: 'sim-model' })).lease, ok);
    expect(await pulls()).toBe(pulled + 1);
    const later = Date.now() + REGISTRY_MAX_AGE_MS + 1000;
    await inPool(pool('sim-model'), (instance) => {
      instance.now = () => later;
    });
    await client.settle(routed(await client.route({ model: 'sim-model' })).lease, ok);
    await until(async () => (await pulls()) === pulled + 2);

    // Removed through the main object: the pool's copy follows.
    await client.removeWorker(engines.b);
    expect((await pool('sim-model').snapshot()).workers.map((w) => w.id)).toEqual([engines.a]);
  });
});
