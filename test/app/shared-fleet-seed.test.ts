/**
 * What a starting replica's flags bring into a shared registry (store-seed.ts), as a redeploy does
 * with the Durable Object: workers its flags add join, workers its flags dropped leave, and admin
 * changes to the rest stand (a restart with the same flags brings no removed worker back).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { useRedis } from '../support/redis.ts';
import { configFrom, eventually, type FleetReplica, fleetReplica } from '../support/replicas.ts';

const A = 'http://a.test';
const B = 'http://b.test';
const C = 'http://c.test';
const D = 'http://d.test';

const redis = useRedis();
const started: FleetReplica[] = [];
afterEach(() => {
  for (const r of started.splice(0)) r.fleet.sync.stop();
});

async function replica(urls: readonly string[]): Promise<FleetReplica> {
  const r = await fleetReplica(configFrom(`--worker-urls ${urls.join(' ')}`), await redis.store());
  started.push(r);
  return r;
}

const ids = (r: FleetReplica) =>
  r.fleet
    .listWorkers()
    .map((w) => w.id)
    .sort();

describe("a replica's flags and the shared registry", () => {
  it('the same flags after an admin removal: the removed worker stays removed', async () => {
    const first = await replica([A, B, C]);
    first.fleet.removeWorker(B);
    await first.settle();
    const restarted = await replica([A, B, C]);
    expect(ids(restarted)).toEqual([A, C]);
    await first.settle();
    expect(ids(first)).toEqual([A, C]);
  });

  it('flags that add one worker and drop another: the fleet gains and loses them, admin additions stay', async () => {
    const old = await replica([A, B, C]);
    old.fleet.addWorker({ url: 'http://admin.test' });
    await old.settle();
    const redeployed = await replica([A, B, D]);
    expect(ids(redeployed)).toEqual([A, 'http://admin.test', B, D]);
    // The replica still running the old flags follows the store once the change is published.
    await redeployed.settle();
    await eventually(async () => {
      await old.settle();
      expect(ids(old)).toEqual([A, 'http://admin.test', B, D]);
    });
    // Another replica with the new flags changes nothing more.
    const another = await replica([A, B, D]);
    expect(ids(another)).toEqual([A, 'http://admin.test', B, D]);
  });
});
