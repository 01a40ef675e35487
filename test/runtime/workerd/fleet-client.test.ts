/**
 * What an isolate sends the fleet's Durable Object per routing call: the prompt as its block hashes,
 * never the prompt itself (a fake object records the calls; the other workerd tests run the real one).
 */
import { describe, expect, it } from 'vitest';
import type { FleetNamespace } from '../../../src/adapters/cloudflare/bindings.ts';
import { FleetClient } from '../../../src/adapters/cloudflare/fleet-client.ts';
import type { RouteInput } from '../../../src/core/contracts/fleet-api.ts';
import { compactRoutingText } from '../../../src/core/routing/compact-text.ts';

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
