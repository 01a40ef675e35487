/**
 * What an isolate sends the fleet's Durable Objects per routing call: the prompt as its block
 * hashes, never the prompt itself; and where its calls go: a model's to its pool object once an
 * answer said it has one, each settle once to the object that granted the lease (fake objects
 * record the calls; the other workerd tests run the real ones).
 */
import { describe, expect, it } from 'vitest';
import type { FleetNamespace } from '../../../src/adapters/cloudflare/bindings.ts';
import { FleetClient } from '../../../src/adapters/cloudflare/fleet-client.ts';
import type { RouteReply } from '../../../src/adapters/cloudflare/rpc.ts';
import { ShardMap } from '../../../src/adapters/cloudflare/shard-map.ts';
import type { RouteInput } from '../../../src/core/contracts/fleet-api.ts';
import { compactRoutingText } from '../../../src/core/policies/compact-text.ts';

function recordingNamespace() {
  const routed: RouteInput[] = [];
  const stub = {
    route: async (input: RouteInput) => {
      routed.push(structuredClone(input));
      return { ok: true, worker: { id: 'w', url: 'http://w' }, lease: 1 };
    },
  };
  const namespace = { idFromName: () => ({}) as DurableObjectId, get: () => stub } as FleetNamespace;
  return { namespace, routed };
}

describe('FleetClient.route', () => {
  it('sends the routing text as its compact form; the other fields as they are', async () => {
    const { namespace, routed } = recordingNamespace();
    const client = new FleetClient(namespace);
    const text = `system: ${'Answer politely and precisely. '.repeat(270)}\nuser: which platform?`; // ~8 KB
    await client.route({ model: 'm', text, sessionId: 's', stream: true });
    const [sent] = routed;
    expect(sent).toEqual({ model: 'm', text: compactRoutingText(text), sessionId: 's', stream: true });
    expect(sent?.text).toHaveLength(2 * Math.ceil(text.length / 64));
    expect(JSON.stringify(sent).length).toBeLessThan(text.length / 10);
    expect(sent?.text).not.toContain('politely');
  });

  it('a request without a routing text (round_robin) is sent unchanged', async () => {
    const { namespace, routed } = recordingNamespace();
    await new FleetClient(namespace).route({ model: 'm' });
    expect(routed).toEqual([{ model: 'm' }]);
  });
});

/** Fake objects by name: each answers routes with `reply(name)` and records every call. */
function fakeObjects(reply: (name: string, input: RouteInput) => RouteReply) {
  const log: string[] = [];
  const namespace = {
    idFromName: (name: string) => ({ name }) as DurableObjectId,
    get: (id: { name: string }) => ({
      route: async (input: RouteInput, known?: number) => {
        log.push(`${id.name} route known=${known}`);
        return reply(id.name, input);
      },
      settle: async (lease: number) => {
        log.push(`${id.name} settle ${lease}`);
        return true;
      },
    }),
  } as unknown as FleetNamespace;
  return { namespace, log };
}

describe('FleetClient shards', () => {
  const worker = { id: 'w', url: 'http://w' };
  const news = { version: 7, models: ['m'] };

  it('routes a model to its pool once an answer named it; settles once, where the lease was granted', async () => {
    const { namespace, log } = fakeObjects((name, input) =>
      name === 'fleet' && input.model === 'm'
        ? { ok: true, worker, lease: 11, shard: 'fleet/pool:m', news } // passed on to the pool
        : { ok: true, worker, lease: name === 'fleet' ? 33 : 22 },
    );
    const client = new FleetClient(namespace, { pools: namespace });
    const first = await client.route({ model: 'm' });
    const second = await client.route({ model: 'm' });
    const other = await client.route({ model: 'x' });
    if (!first.ok || !second.ok || !other.ok) throw new Error('expected routes');
    expect(new Set([first.lease, second.lease, other.lease]).size).toBe(3); // the isolate's numbers
    for (const r of [first, second, other])
      expect(await client.settle(r.lease, { kind: 'success' })).toBe(true);
    expect(await client.settle(first.lease, { kind: 'success' })).toBe(false);
    expect(log).toEqual([
      'fleet route known=0',
      'fleet/pool:m route known=7',
      'fleet route known=7',
      'fleet/pool:m settle 11',
      'fleet/pool:m settle 22',
      'fleet settle 33',
    ]);
    expect(client.leasesHeld).toBe(0);
  });

  it('without a pool namespace, sends no version (the main object then routes everything itself)', async () => {
    const { namespace, log } = fakeObjects(() => ({ ok: true, worker, lease: 1, news }));
    const client = new FleetClient(namespace);
    await client.route({ model: 'm' });
    await client.route({ model: 'm' });
    expect(log).toEqual(['fleet route known=undefined', 'fleet route known=undefined']);
  });

  it('forgets a lease the core never settled once its time is up', () => {
    let now = 0;
    const shards = new ShardMap<string>(1000, () => now);
    const lost = shards.grant('fleet', 1);
    now = 999;
    const kept = shards.grant('fleet', 2);
    now = 1000;
    shards.grant('fleet', 3); // the oldest, due, is forgotten
    expect(shards.take(lost)).toBeUndefined();
    expect(shards.take(kept)).toMatchObject({ target: 'fleet', lease: 2 });
    expect(shards.take(kept)).toBeUndefined();
  });
});
