/**
 * vLLM's engine-management endpoints are admin routes that fan out to every engine (not the /v1/*
 * passthrough to one engine): body and query forwarded, the engines' bearer sent, a per-engine
 * summary answered (200 all OK, 502 otherwise).
 */
import { describe, expect, it } from 'vitest';
import { ENGINE_PATHS } from '../../src/core/http/admin-engine.ts';
import { chatBody, checkLeasesAfterEach, type ErrorBody, stalled, startApp } from './app-stack.ts';

checkLeasesAfterEach();

const ENGINES = { 'a.test': {}, 'b.test': {} };
const TWO = '--worker-urls http://a.test http://b.test --api-key engine-secret';

type Summary = {
  ok: boolean;
  results: { url: string; status: number | null; ok: boolean; body?: unknown }[];
};

describe('engine-management admin routes', () => {
  it('fans /v1/load_lora_adapter out to every engine with the JSON body and the engines bearer', async () => {
    const app = await startApp(`${TWO} --admin-api-key admin-key`, ENGINES, { peer: '203.0.113.9' });
    app.net.clearCalls();
    const lora = { lora_name: 'sql', lora_path: '/adapters/sql' };
    const res = await app.post(lora, {
      path: '/v1/load_lora_adapter',
      headers: { authorization: 'Bearer admin-key' },
    });
    expect(res.status).toBe(200);
    const summary = (await res.json()) as Summary;
    expect(summary.ok).toBe(true);
    expect(summary.results.map((r) => [r.url, r.status])).toEqual([
      ['http://a.test', 200],
      ['http://b.test', 200],
    ]);
    // The simulated engine echoes what it got.
    expect(summary.results[0]?.body).toMatchObject({ path: '/v1/load_lora_adapter', body: lora });
    const calls = app.net.calls.filter((c) => c.path === '/v1/load_lora_adapter');
    expect(calls.map((c) => c.host)).toEqual(['a.test', 'b.test']);
    for (const call of calls) {
      expect(JSON.parse(call.body ?? 'null')).toEqual(lora);
      expect(call.headers['content-type']).toBe('application/json');
      expect(call.headers.authorization).toBe('Bearer engine-secret'); // never the admin key
    }
  });

  it('forwards the query, and answers 502 with each engine result when one fails', async () => {
    const app = await startApp(TWO, ENGINES);
    app.net.clearCalls();
    // The simulated engine has no /sleep: each answers 404.
    const res = await app.request('/sleep?level=1', { method: 'POST' });
    expect(res.status).toBe(502);
    const summary = (await res.json()) as Summary;
    expect(summary).toMatchObject({ ok: false });
    expect(summary.results.map((r) => [r.url, r.status, r.ok])).toEqual([
      ['http://a.test', 404, false],
      ['http://b.test', 404, false],
    ]);
    expect(app.net.calls.map((c) => `${c.method} ${c.host}${c.path}`)).toEqual([
      'POST a.test/sleep?level=1',
      'POST b.test/sleep?level=1',
    ]);
    app.net.clearCalls();
    app.net.refuse('b.test');
    const partial = await app.request('/reset_prefix_cache', { method: 'POST' });
    expect(partial.status).toBe(502);
    const results = ((await partial.json()) as Summary).results;
    expect(results.map((r) => [r.url, r.status, r.ok])).toEqual([
      ['http://a.test', 200, true],
      ['http://b.test', null, false],
    ]);
    app.net.restore('b.test');
    expect((await app.request('/reset_prefix_cache', { method: 'POST' })).status).toBe(200);
  });

  it('skips a draining worker', async () => {
    const app = await startApp(TWO, { 'a.test': { tokens: 50, sleep: stalled }, 'b.test': {} });
    const res = await app.post(chatBody('Read me every stop, slowly.', { stream: true }));
    expect(res.headers.get('x-routed-worker-id')).toBe('http://a.test');
    const reader = res.body!.getReader();
    await reader.read();
    await app.router.fleet.removeWorker('http://a.test'); // in flight: draining
    expect(app.router.fleet.listWorkers().find((w) => w.id === 'http://a.test')?.draining).toBe(true);
    app.net.clearCalls();
    const reset = await app.request('/reset_mm_cache', { method: 'POST' });
    expect(((await reset.json()) as Summary).results.map((r) => r.url)).toEqual(['http://b.test']);
    expect(app.net.calls.map((c) => c.host)).toEqual(['b.test']);
    await reader.cancel();
  });

  it('calls a data-parallel engine once for all its ranks', async () => {
    const app = await startApp(`${TWO} --intra-node-data-parallel-size 2`, ENGINES);
    expect(app.router.fleet.listWorkers()).toHaveLength(4);
    app.net.clearCalls();
    const res = await app.request('/is_sleeping');
    expect(res.status).toBe(502); // the simulated engine has no /is_sleeping
    expect(((await res.json()) as Summary).results.map((r) => r.url)).toEqual([
      'http://a.test',
      'http://b.test',
    ]);
    expect(app.net.calls.map((c) => `${c.method} ${c.host}${c.path}`)).toEqual([
      'GET a.test/is_sleeping',
      'GET b.test/is_sleeping',
    ]);
  });

  it('every engine-management route is an admin route: refused to a remote peer, no engine called', async () => {
    const app = await startApp(TWO, ENGINES, { peer: '203.0.113.9' });
    app.net.clearCalls();
    for (const [method, path] of ENGINE_PATHS) {
      const res = await app.request(path, {
        method,
        ...(method === 'POST' ? { headers: { 'content-type': 'application/json' }, body: '{}' } : {}),
      });
      expect(res.status, path).toBe(403);
    }
    // Other methods and a trailing slash do not fall through to the /v1/* passthrough either.
    for (const [method, path] of [
      ['GET', '/v1/load_lora_adapter'],
      ['PUT', '/v1/unload_lora_adapter'],
      ['POST', '/v1/load_lora_adapter/'],
    ] as const) {
      const res = await app.request(path, { method });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(((await res.json()) as ErrorBody).error.code).toBe('not_found');
    }
    expect(app.net.calls).toEqual([]);
  });

  it('refuses a body that is not JSON', async () => {
    const app = await startApp(TWO, ENGINES);
    app.net.clearCalls();
    const text = await app.request('/collective_rpc', { method: 'POST', body: '{"method":"x"}' });
    expect(text.status).toBe(403);
    const bad = await app.post('{nope', { path: '/collective_rpc' });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as ErrorBody).error.code).toBe('invalid_json');
    expect(app.net.calls).toEqual([]);
  });
});
