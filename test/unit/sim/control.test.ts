import { describe, expect, it } from 'vitest';
import { createSimEngine, type SimEngine, type SimSleep } from '../../../src/sim/engine.ts';

const get = (engine: SimEngine, path: string, headers: Record<string, string> = {}) =>
  engine.fetch(new Request(`http://sim${path}`, { headers }));
const post = (engine: SimEngine, path: string, body: unknown, headers: Record<string, string> = {}) =>
  engine.fetch(
    new Request(`http://sim${path}`, {
      method: 'POST',
      body: typeof body === 'string' ? body : JSON.stringify(body),
      headers,
    }),
  );
const chat = (engine: SimEngine, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
  post(engine, '/v1/chat/completions', { messages: [{ role: 'user', content: 'hi' }], ...extra }, headers);

/** A sleep that waits until the test opens the gate. */
function gatedSleep(): { sleep: SimSleep; open(): void } {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { sleep: () => gate, open };
}

describe('sim engine: health, models, metrics, server info', () => {
  it('answers /health 200 with an empty body, 503 when unhealthy', async () => {
    const engine = createSimEngine({ id: 'h' });
    const ok = await get(engine, '/health');
    expect(ok.status).toBe(200);
    expect(await ok.text()).toBe('');
    expect(ok.headers.get('x-sim-engine')).toBe('h');
    engine.configure({ unhealthy: true });
    expect((await get(engine, '/health')).status).toBe(503);
    expect((await chat(engine)).status).toBe(200); // inference still works
    expect(engine.stats().health_probes_total).toBe(2);
  });

  it('lists models in the OpenAI shape, owned by vllm, with max_model_len', async () => {
    const engine = createSimEngine({ models: ['a', 'b'], maxModelLen: 4096 });
    const json = await (await get(engine, '/v1/models')).json();
    expect(json.object).toBe('list');
    expect(json.data.map((m: { id: string }) => m.id)).toEqual(['a', 'b']);
    expect(json.data[0]).toMatchObject({ object: 'model', owned_by: 'vllm', root: 'a', max_model_len: 4096 });
  });

  it('exports running and waiting requests in /metrics (max-running queues the rest)', async () => {
    const { sleep, open } = gatedSleep();
    const engine = createSimEngine({ models: ['m'], maxRunning: 1, ttftMs: 10, sleep });
    const first = chat(engine);
    const second = chat(engine);
    await engine.waitForLog((e) => e.seq === 2); // the second request is queued by now
    const text = await (await get(engine, '/metrics')).text();
    expect(text).toContain(
      '# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name="m"} 1\n',
    );
    expect(text).toContain('vllm:num_requests_waiting{model_name="m"} 1\n');
    expect(engine.stats()).toMatchObject({ running: 1, waiting: 1 });
    open();
    expect((await first).status).toBe(200);
    expect((await second).status).toBe(200);
    expect(engine.stats()).toMatchObject({ running: 0, waiting: 0, success_total: 2 });
    expect(await (await get(engine, '/metrics')).text()).toContain(
      'vllm:request_success_total{model_name="m"} 2\n',
    );
  });

  it('answers /get_server_info, /get_model_info and the Mooncake /query per DP rank', async () => {
    const engine = createSimEngine({ id: 'p', models: ['m'], dpSize: 2, kvPort: 7000 });
    expect(await (await get(engine, '/get_server_info')).json()).toMatchObject({
      id: 'p',
      served_model_name: ['m'],
    });
    expect(await (await get(engine, '/get_model_info')).json()).toMatchObject({
      model_path: 'm',
      is_generation: true,
    });
    expect(await (await get(engine, '/query')).json()).toEqual({
      '0': { engine_id: 'p-dp0', worker_addr: { '0': { '0': '127.0.0.1:7000' } } },
      '1': { engine_id: 'p-dp1', worker_addr: { '0': { '0': '127.0.0.1:7001' } } },
    });
  });
});

describe('sim engine: prefill/decode', () => {
  it('returns NIXL kv_transfer_params from a prefill leg and logs what it received', async () => {
    const engine = createSimEngine({ id: 'pf', kvHost: '10.0.0.1', kvPort: 5600 });
    const sent = {
      do_remote_decode: true,
      do_remote_prefill: false,
      remote_engine_id: null,
      remote_block_ids: null,
      remote_host: null,
      remote_port: null,
    };
    const res = await chat(
      engine,
      { max_tokens: 1, kv_transfer_params: sent, messages: [{ role: 'user', content: 'x'.repeat(200) }] },
      { 'x-request-id': 'req-1', 'X-data-parallel-rank': '1' },
    );
    const json = await res.json();
    expect(json.kv_transfer_params).toEqual({
      do_remote_prefill: true,
      do_remote_decode: false,
      remote_block_ids: [0, 1, 2, 3],
      remote_engine_id: 'pf-dp1',
      remote_request_id: 'req-1',
      remote_host: '10.0.0.1',
      remote_port: 5601,
      tp_size: 1,
    });
    const entry = engine.log[0]!;
    expect((entry.body as { kv_transfer_params: unknown }).kv_transfer_params).toEqual(sent);
    expect(entry.headers['x-data-parallel-rank']).toBe('1');
    const decode = await (await chat(engine, { kv_transfer_params: json.kv_transfer_params })).json();
    expect(decode.kv_transfer_params).toBeNull();
  });
});

describe('sim engine: request log', () => {
  it('records method, path, lowercased headers, parsed body, timing and outcome', async () => {
    const engine = createSimEngine({ tokens: 2 });
    const before = performance.timeOrigin + performance.now();
    await chat(engine, { stream: true }, { 'X-Session-Id': 's1', Authorization: 'Bearer t' });
    await post(engine, '/v1/chat/completions', '{broken');
    const [ok, bad] = engine.log;
    expect(ok).toMatchObject({
      seq: 1,
      kind: 'inference',
      method: 'POST',
      path: '/v1/chat/completions',
      status: 200,
      completed: true,
      aborted: false,
      tokensSent: 2,
      injected: null,
    });
    expect(ok!.headers).toMatchObject({ 'x-session-id': 's1', authorization: 'Bearer t' });
    expect(ok!.body).toMatchObject({ stream: true });
    expect(ok!.tMs).toBeGreaterThanOrEqual(before);
    expect(ok!.tEndMs).toBeGreaterThanOrEqual(ok!.tMs);
    expect(bad).toMatchObject({ status: 400, body: null, completed: true });
  });

  it('keeps probes apart, bounds the log, and turns it off with logSize 0', async () => {
    const engine = createSimEngine({ logSize: 3 });
    await get(engine, '/health');
    for (let i = 0; i < 5; i++) await chat(engine, { max_tokens: i });
    expect(engine.log.map((e) => (e.body as { max_tokens: number }).max_tokens)).toEqual([2, 3, 4]);
    expect(engine.probeLog.map((e) => e.path)).toEqual(['/health']);
    const off = createSimEngine({ logSize: 0 });
    await chat(off);
    expect(off.log).toEqual([]);
    expect(off.stats().requests_total).toBe(1);
  });

  it('waitForLog resolves on an update, not only on a new entry, and times out with context', async () => {
    const { sleep, open } = gatedSleep();
    const engine = createSimEngine({ ttftMs: 5, sleep });
    const pending = chat(engine);
    const started = await engine.waitForLog((e) => e.path === '/v1/chat/completions');
    expect(started.tEndMs).toBeNull();
    const finished = engine.waitForLog((e) => e.completed);
    open();
    expect((await finished).seq).toBe(started.seq);
    await pending;
    await expect(engine.waitForLog((e) => e.status === 418, 20)).rejects.toThrow(
      /no matching inference entry within 20 ms/,
    );
    await get(engine, '/v1/models');
    expect((await engine.waitForLog((e) => e.path === '/v1/models', 1000, 'probe')).status).toBe(200);
  });
});

describe('sim engine: admin API', () => {
  it('changes options through POST /admin/config with the CLI names', async () => {
    const engine = createSimEngine({ id: 'a' });
    const res = await post(engine, '/admin/config', {
      'fail-mode': 'status',
      'fail-status': 503,
      'fail-first': 1,
      'retry-after': '1',
      'ttft-ms': 0,
      unhealthy: 1,
      model: 'x,y',
    });
    expect(res.status).toBe(200);
    expect((await res.json()).config).toMatchObject({
      'fail-mode': 'status',
      'fail-first': 1,
      model: ['x', 'y'],
    });
    expect(engine.config.failure).toEqual({ mode: 'status', status: 503, first: 1, retryAfter: '1' });
    expect(engine.config.unhealthy).toBe(true);
    expect((await chat(engine, { model: 'y' })).status).toBe(503);
    expect((await chat(engine, { model: 'y' })).status).toBe(200);
    // fail-rate alone replaces the first-N selection
    await post(engine, '/admin/config', { 'fail-rate': 1 });
    expect(engine.config.failure).toEqual({ mode: 'status', status: 503, rate: 1, retryAfter: '1' });
    expect((await chat(engine, { model: 'x' })).status).toBe(503);
    await post(engine, '/admin/config', { 'fail-mode': 'none' });
    expect((await chat(engine, { model: 'x' })).status).toBe(200);
  });

  it('rejects unknown settings and bad values with a 400 naming them', async () => {
    const engine = createSimEngine();
    for (const [body, pattern] of [
      [{ 'no-such': 1 }, /--no-such/],
      [{ 'fail-mode': 'explode' }, /--fail-mode/],
      [{ 'fail-rate': 2 }, /--fail-rate/],
      [{ 'ttft-ms': 'soon' }, /--ttft-ms/],
      [[1], /JSON object/],
    ] as const) {
      const res = await post(engine, '/admin/config', body);
      expect(res.status).toBe(400);
      expect((await res.json()).error.message).toMatch(pattern);
    }
    expect(engine.config.failure.mode).toBe('none');
  });

  it('serves the log, stats and reset', async () => {
    const engine = createSimEngine({ id: 's' });
    await chat(engine);
    await get(engine, '/health');
    await get(engine, '/metrics');
    const log = await (await get(engine, '/admin/log')).json();
    expect(log.map((e: { path: string }) => e.path)).toEqual(['/v1/chat/completions']);
    const health = await (await get(engine, '/admin/log?kind=health')).json();
    expect(health.map((e: { path: string }) => e.path)).toEqual(['/health']);
    expect((await (await get(engine, '/admin/log?kind=all')).json()).length).toBe(3);
    expect((await get(engine, '/admin/log?kind=nope')).status).toBe(400);
    expect(await (await get(engine, '/admin/stats')).json()).toMatchObject({
      id: 's',
      requests_total: 1,
      success_total: 1,
    });
    expect((await post(engine, '/admin/reset', {})).status).toBe(200);
    expect(engine.log).toEqual([]);
    expect(engine.stats()).toMatchObject({ requests_total: 0, health_probes_total: 0, cache_size_blocks: 0 });
    expect(engine.log.length + engine.probeLog.length).toBe(0); // admin calls are not logged
  });
});
