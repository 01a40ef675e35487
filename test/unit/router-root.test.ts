/**
 * The composition root: one refreshWorkers for every runtime. With health checks on it is a health
 * tick; with them off a /v1/models lookup; both carry the engines' bearer (--api-key). A worker
 * added through the admin API is refreshed the same way.
 */
import { describe, expect, it } from 'vitest';
import { parseRouterConfig } from '../../src/core/config/schema.ts';
import { createRouter } from '../../src/core/router.ts';
import { createSimEngine } from '../../src/sim/engine.ts';
import { FakeClock, seededRandom } from '../support/fake-clock.ts';
import { inMemoryUpstream } from '../support/in-memory-upstream.ts';

function build(health: { disabled: boolean }) {
  const net = inMemoryUpstream({
    'a.test': createSimEngine({ id: 'a', models: ['model-a'] }),
    'b.test': createSimEngine({ id: 'b', models: ['model-b'] }),
  });
  const config = parseRouterConfig({
    workers: { urls: ['http://a.test'], apiKey: 'engine-secret' },
    health,
  });
  const router = createRouter(config, {
    upstream: net.upstream,
    logSink: () => {},
    clock: new FakeClock(),
    random: seededRandom(3),
    // A local admin client (the admin API answers loopback peers when no --admin-api-key is set).
    peerAddress: () => '127.0.0.1',
  });
  return { net, router };
}

describe('refreshWorkers (the composition root)', () => {
  for (const disabled of [false, true]) {
    const mode = disabled ? 'health checks off: models lookup' : 'health checks on: health tick';
    it(`${mode}, with the engines' bearer, at start and for an admin-added worker`, async () => {
      const { net, router } = build({ disabled });
      await router.start(async () => {});
      expect(await router.fleet.models()).toEqual(['model-a']);
      const res = await router.app.request('/add_worker?url=http://b.test', { method: 'POST' });
      expect(res.status).toBe(201);
      expect(await router.fleet.models()).toEqual(['model-a', 'model-b']);
      const paths = net.calls.map((c) => `${c.host}${c.path}`);
      if (disabled) expect(paths).toEqual(['a.test/v1/models', 'b.test/v1/models']);
      else
        expect(paths).toEqual(expect.arrayContaining(['a.test/health', 'b.test/health', 'b.test/v1/models']));
      for (const call of net.calls) expect(call.headers.authorization).toBe('Bearer engine-secret');
    });
  }
});
