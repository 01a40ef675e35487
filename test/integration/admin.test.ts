import { afterEach, describe, expect, it } from 'vitest';
import { type Running, type RunningEngine, startEngines, startStack } from '../support/harness.ts';

type WorkerView = { id: string; url: string; healthy: boolean; models: string[] | null; priority?: number };
type ErrorBody = { error: { message: string; code: string } };

const chat = JSON.stringify({
  model: 'sim-model',
  messages: [{ role: 'user', content: 'hi' }],
  max_tokens: 2,
});

describe('worker admin API', () => {
  let stack: Running | undefined;
  let extra: RunningEngine[] = [];
  afterEach(async () => {
    await stack?.stop();
    stack = undefined;
    await Promise.all(extra.map((e) => e.close()));
    extra = [];
  });

  const api = (path: string, init: { method?: string; body?: unknown } = {}) =>
    fetch(`${stack!.router.url}${path}`, {
      method: init.method ?? 'GET',
      ...(init.body === undefined
        ? {}
        : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(init.body) }),
    });

  it('lists, adds (probing the new engine at once), reads, updates and removes workers', async () => {
    stack = await startStack({ engines: 1, router: { healthLoop: false } });
    extra = await startEngines(1);
    const url = extra[0]!.url;

    const list = (await (await api('/workers')).json()) as { workers: WorkerView[] };
    expect(list.workers.map((w) => w.url)).toEqual([stack.engines[0]!.url]);

    const created = await api('/workers', { method: 'POST', body: { url, priority: 1 } });
    expect(created.status).toBe(201);
    const [added] = ((await created.json()) as { workers: WorkerView[] }).workers;
    expect(added).toMatchObject({ id: url, healthy: true, models: ['sim-model'], priority: 1 });
    expect(extra[0]!.engine.probeLog.some((e) => e.path === '/health')).toBe(true);

    // Priority 1 beats the default tier: traffic goes to the new worker while it is available.
    for (let i = 0; i < 3; i++) {
      const res = await api('/v1/chat/completions', { method: 'POST', body: JSON.parse(chat) });
      expect(res.headers.get('x-routed-worker-id')).toBe(url);
    }

    const id = encodeURIComponent(url);
    expect(((await (await api(`/workers/${id}`)).json()) as WorkerView).url).toBe(url);
    const updated = await api(`/workers/${id}`, {
      method: 'PUT',
      body: { priority: null, models: ['other'] },
    });
    expect(updated.status).toBe(200);
    expect((await updated.json()) as WorkerView).toMatchObject({ models: ['other'] });
    expect(
      ((await (await api('/v1/models')).json()) as { data: { id: string }[] }).data.map((m) => m.id),
    ).toEqual(['sim-model', 'other']);

    const removed = await api(`/workers/${id}`, { method: 'DELETE' });
    expect(removed.status).toBe(202);
    expect((await api(`/workers/${id}`)).status).toBe(404);
  });

  it('answers bad input with 400 naming the field, unknown ids with 404, duplicates with 409', async () => {
    stack = await startStack({ engines: 1, router: { healthLoop: false } });
    const url = stack.engines[0]!.url;

    const badUrl = await api('/workers', { method: 'POST', body: { url: 'ftp://x' } });
    expect(badUrl.status).toBe(400);
    expect(((await badUrl.json()) as ErrorBody).error.message).toMatch(/^url:/);

    const badField = await api('/workers', {
      method: 'POST',
      body: { url, circuit_breaker: { failure_threshold: 0 } },
    });
    expect(badField.status).toBe(400);
    expect(((await badField.json()) as ErrorBody).error.message).toContain(
      'circuit_breaker.failure_threshold',
    );

    const badRetry = await api('/workers', {
      method: 'POST',
      body: { url: 'http://127.0.0.1:9', retry: { initial_backoff_ms: 100000 } },
    });
    expect(badRetry.status).toBe(400);
    expect(((await badRetry.json()) as ErrorBody).error.message).toContain('retry.initialBackoffMs');

    const notJson = await fetch(`${stack.router.url}/workers`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{nope',
    });
    expect(notJson.status).toBe(400);

    const dup = await api('/workers', { method: 'POST', body: { url } });
    expect(dup.status).toBe(409);
    expect(((await dup.json()) as ErrorBody).error.code).toBe('worker_exists');

    expect((await api('/workers/http%3A%2F%2Fnope%3A1')).status).toBe(404);
    expect((await api('/workers/http%3A%2F%2Fnope%3A1', { method: 'PUT', body: {} })).status).toBe(404);
    expect((await api('/workers/http%3A%2F%2Fnope%3A1', { method: 'DELETE' })).status).toBe(404);
    expect((await api('/remove_worker?url=http://nope:1', { method: 'POST' })).status).toBe(404);
    expect((await api('/add_worker?url=notaurl', { method: 'POST' })).status).toBe(400);
    expect((await api('/finish_session', { method: 'POST' })).status).toBe(400);
  });

  it('keeps the legacy endpoints: add_worker is idempotent, list_workers, get_loads, remove_worker', async () => {
    stack = await startStack({ engines: 1, router: { healthLoop: false } });
    extra = await startEngines(1);
    const url = extra[0]!.url;
    const first = await api(`/add_worker?url=${encodeURIComponent(url)}`, { method: 'POST' });
    expect(first.status).toBe(201);
    const again = await api(`/add_worker?url=${encodeURIComponent(url)}`, { method: 'POST' });
    expect(again.status).toBe(200);
    expect(((await again.json()) as { already_registered: string[] }).already_registered).toEqual([url]);
    expect(((await (await api('/list_workers')).json()) as { urls: string[] }).urls).toEqual([
      stack.engines[0]!.url,
      url,
    ]);
    const loads = (await (await api('/get_loads')).json()) as { workers: { worker: string; load: number }[] };
    expect(loads.workers).toEqual([
      { worker: stack.engines[0]!.url, load: 0 },
      { worker: url, load: 0 },
    ]);
    expect((await api(`/remove_worker?url=${encodeURIComponent(url)}`, { method: 'POST' })).status).toBe(200);
    expect(((await (await api('/list_workers')).json()) as { urls: string[] }).urls).toEqual([
      stack.engines[0]!.url,
    ]);
  });

  it('lets a removed worker finish its in-flight stream (draining)', async () => {
    stack = await startStack({
      engines: 1,
      engineOptions: { tokens: 10, itlMs: 20 },
      router: { healthLoop: false },
    });
    const url = stack.engines[0]!.url;
    const res = await api('/v1/chat/completions', {
      method: 'POST',
      body: { model: 'sim-model', stream: true, messages: [{ role: 'user', content: 'hi' }] },
    });
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    const del = await api(`/workers/${encodeURIComponent(url)}`, { method: 'DELETE' });
    expect(((await del.json()) as { draining: boolean }).draining).toBe(true);
    expect(
      ((await (await api('/workers')).json()) as { workers: { draining: boolean }[] }).workers[0]?.draining,
    ).toBe(true);
    let text = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    expect(text).toContain('[DONE]');
    expect(((await (await api('/workers')).json()) as { workers: unknown[] }).workers).toEqual([]);
    expect((await api('/v1/chat/completions', { method: 'POST', body: JSON.parse(chat) })).status).toBe(503);
  });

  it('fans /flush_cache out to every engine and reports each result; answers /get_server_info', async () => {
    stack = await startStack({ engines: 2, router: { healthLoop: false } });
    const res = await api('/flush_cache', { method: 'POST' });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { ok: boolean; results: { url: string; status: number }[] };
    expect(body.results.map((r) => [r.url, r.status])).toEqual(stack.engines.map((e) => [e.url, 200]));
    const info = (await (await api('/get_server_info')).json()) as {
      workers: number;
      healthy_workers: number;
    };
    expect(info).toMatchObject({ workers: 2, healthy_workers: 2 });
  });
});

describe('data-parallel ranks', () => {
  let stack: Running | undefined;
  afterEach(async () => {
    await stack?.stop();
    stack = undefined;
  });

  it('expands a URL into ranks, sends the rank header, splits 50/50, probes the base URL once', async () => {
    stack = await startStack({
      engines: 1,
      config: { workers: { dpSize: 2 } },
      router: { healthLoop: false },
    });
    const engine = stack.engines[0]!;
    expect(stack.router.fleet.listWorkers().map((w) => w.id)).toEqual([`${engine.url}@0`, `${engine.url}@1`]);
    for (let i = 0; i < 10; i++) {
      const res = await fetch(`${stack.router.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: chat,
      });
      await res.arrayBuffer();
    }
    const ranks = engine.engine.log.map((e) => e.headers['x-data-parallel-rank']);
    expect(ranks.filter((r) => r === '0')).toHaveLength(5);
    expect(ranks.filter((r) => r === '1')).toHaveLength(5);

    const before = engine.engine.probeLog.filter((e) => e.path === '/health').length;
    await stack.router.healthTick();
    expect(engine.engine.probeLog.filter((e) => e.path === '/health').length).toBe(before + 1);

    const removed = await fetch(`${stack.router.url}/remove_worker?url=${encodeURIComponent(engine.url)}`, {
      method: 'POST',
    });
    expect(((await removed.json()) as { removed: string[] }).removed).toEqual([
      `${engine.url}@0`,
      `${engine.url}@1`,
    ]);
    expect(stack.router.fleet.listWorkers()).toEqual([]);
  });
});
