/**
 * Prefill/decode through the in-memory app, time on the fake clock: the KV hold time, retries of
 * each leg on its own pool, and exactly-once leases (checked after each test).
 */
import { describe, expect, it } from 'vitest';
import { chatBody, checkLeasesAfterEach, startApp } from './app-stack.ts';

checkLeasesAfterEach();

const PD =
  '--vllm-pd-disaggregation --prefill http://p1.test --prefill http://p2.test --decode http://d1.test --decode http://d2.test';
const ENGINES = { 'p1.test': {}, 'p2.test': {}, 'd1.test': {}, 'd2.test': {} };

describe('prefill/decode in the app', () => {
  it('a prefill failing once is retried on the other prefill engine; decode runs once', async () => {
    const stack = await startApp(PD, {
      ...ENGINES,
      'p1.test': { failure: { mode: 'status', status: 503, first: 1 } },
    });
    const res = await stack.post(chatBody('Which season?'), { headers: { 'x-session-id': 's' } });
    expect(res.status).toBe(200);
    await res.text();
    expect(res.headers.get('x-router-attempts')).toBe(String(stack.inference().length));
    const legs = stack.inference();
    const prefills = legs.filter((l) => l.startsWith('p'));
    expect(prefills.at(-1)).toMatch(/ 200$/);
    expect(legs.filter((l) => l.startsWith('d'))).toHaveLength(1);
  });

  it('every prefill failing: the engine answer passes through and no decode leg is sent', async () => {
    const fail = {
      failure: { mode: 'status' as const, status: 400, body: '{"error":{"message":"bad prompt"}}' },
    };
    const stack = await startApp(PD, { ...ENGINES, 'p1.test': fail, 'p2.test': fail });
    const res = await stack.post(chatBody('x'));
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: { message: 'bad prompt' } });
    expect(stack.inference().filter((l) => l.startsWith('d'))).toEqual([]);
  });

  it('a decode failing before its first byte is retried on the decode pool with the same KV params', async () => {
    const stack = await startApp(PD, { ...ENGINES, 'd1.test': { failure: { mode: 'status', status: 503 } } });
    const res = await stack.post(chatBody('x', { stream: true }));
    expect(res.status).toBe(200);
    await res.text();
    const decodes = [...stack.engines['d1.test']!.log, ...stack.engines['d2.test']!.log];
    expect(decodes.length).toBeGreaterThanOrEqual(1);
    const kvs = decodes.map((e) =>
      JSON.stringify((e.body as { kv_transfer_params: unknown }).kv_transfer_params),
    );
    expect(new Set(kvs).size).toBe(1);
    // One prefill for the whole request.
    expect(stack.engines['p1.test']!.log.length + stack.engines['p2.test']!.log.length).toBe(1);
  });

  it('a decode that cannot start within the KV hold time gets a fresh prefill (said in the log)', async () => {
    const stack = await startApp(
      '--vllm-pd-disaggregation --prefill http://p1.test --decode http://d1.test --pd-kv-hold-secs 1 ' +
        '--retry-initial-backoff-ms 600 --retry-max-backoff-ms 5000 --retry-jitter-factor 0 --disable-circuit-breaker',
      { 'p1.test': {}, 'd1.test': { failure: { mode: 'status', status: 503, first: 3 } } },
    );
    const res = await stack.post(chatBody('x'));
    expect(res.status).toBe(200);
    await res.text();
    // Decode at 0 (503), 600 ms (503), then 1800 ms would be past the hold: a new prefill, then decode.
    expect(stack.inference()).toEqual([
      'p1.test 200',
      'd1.test 503',
      'd1.test 503',
      'p1.test 200',
      'd1.test 503',
      'd1.test 200',
    ]);
    expect(stack.logs.some((l) => l.includes("could not start within the prefill's KV hold time"))).toBe(
      true,
    );
    expect(await stack.metric('vllm_router_pd_fresh_prefills_total', 'reason="kv_hold_expired"')).toBe(1);
  });

  it('requests that are not split (embeddings) go to the decode pool', async () => {
    const stack = await startApp(PD, ENGINES);
    const res = await stack.post({ model: 'sim-model', input: 'x' }, { path: '/v1/embeddings' });
    expect(res.status).toBe(200);
    await res.text();
    expect(stack.inference()).toHaveLength(1);
    expect(stack.inference()[0]).toMatch(/^d\d\.test 200$/);
  });

  it('readiness needs a healthy worker of each role', async () => {
    const stack = await startApp(PD, {
      ...ENGINES,
      'd1.test': { unhealthy: true },
      'd2.test': { unhealthy: true },
    });
    const res = await stack.request('/readiness');
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ reason: 'no_healthy_prefill_or_decode_worker' });
  });
});

describe('Mooncake concurrent dispatch', () => {
  const MOONCAKE =
    '--vllm-pd-disaggregation --kv-connector mooncake --pd-concurrent-dispatch --prefill http://p1.test 80 --decode http://d1.test';

  it('sends both legs; the decode names the pinned prefill engine and the transfer', async () => {
    const stack = await startApp(MOONCAKE, { 'p1.test': {}, 'd1.test': {} });
    const res = await stack.post(chatBody('x'));
    expect(res.status).toBe(200);
    await res.text();
    const prefill = stack.engines['p1.test']!.log[0]!.body as { kv_transfer_params: Record<string, unknown> };
    const decode = stack.engines['d1.test']!.log[0]!.body as { kv_transfer_params: Record<string, unknown> };
    expect(decode.kv_transfer_params).toEqual({
      do_remote_decode: false,
      do_remote_prefill: true,
      transfer_id: prefill.kv_transfer_params.transfer_id,
      remote_bootstrap_addr: 'http://p1.test:80',
      remote_engine_id: 'p1.test-dp0',
    });
  });

  it('a prefill that fails calls the decode off; the client gets the prefill engine answer', async () => {
    const stack = await startApp(MOONCAKE, {
      'p1.test': { failure: { mode: 'status', status: 400 } },
      'd1.test': { sleep: (_ms, signal) => new Promise((r) => signal?.addEventListener('abort', () => r())) },
    });
    const res = await stack.post(chatBody('x'));
    expect(res.status).toBe(400);
    await res.text();
    await stack.engines['d1.test']!.waitForLog((e) => e.aborted, 2000);
  });
});

describe('P2P-NCCL request ids (static workers: their host:port stands for the ZMQ address)', () => {
  const P2P =
    '--vllm-pd-disaggregation --kv-connector p2p_nccl --policy round_robin --prefill http://p1.test --decode http://d1.test --decode http://d2.test';
  const ID = /^___prefill_addr_p1\.test:80___decode_addr_(d\d\.test):80_[0-9a-f]{32}$/;

  it('both legs carry the id naming the prefill and the decode engine', async () => {
    const stack = await startApp(P2P, { 'p1.test': {}, 'd1.test': {}, 'd2.test': {} });
    const res = await stack.post(chatBody('x'));
    expect(res.status).toBe(200);
    await res.text();
    const prefill = stack.engines['p1.test']!.log[0]!;
    const id = prefill.headers['x-request-id'] as string;
    const decodeHost = ID.exec(id)?.[1] as string;
    expect(decodeHost).toBeDefined();
    expect(stack.engines[decodeHost]!.log[0]!.headers['x-request-id']).toBe(id);
    expect(prefill.body).not.toHaveProperty('kv_transfer_params');
  });

  it('a decode retried on another engine gets a fresh prefill that names it', async () => {
    const stack = await startApp(P2P, {
      'p1.test': {},
      'd1.test': { failure: { mode: 'status', status: 503 } },
      'd2.test': { failure: { mode: 'status', status: 503 } },
    });
    stack.engines['d2.test']!.configure({ failure: { mode: 'none' } });
    // Round robin: one of the two requests starts on d1 (503) and moves to d2.
    for (const q of ['x', 'y']) {
      const res = await stack.post(chatBody(q));
      expect(res.status).toBe(200);
      await res.text();
    }
    expect(stack.engines['d1.test']!.log.length).toBeGreaterThan(0);
    const ids = stack.engines['p1.test']!.log.map((e) => ID.exec(e.headers['x-request-id'] as string)?.[1]);
    const decodes = stack.inference().filter((l) => l.startsWith('d'));
    expect(decodes.at(-1)).toBe('d2.test 200');
    // Each decode engine got requests only under ids naming it, each after a prefill naming it.
    for (const host of ['d1.test', 'd2.test']) {
      for (const e of stack.engines[host]!.log)
        expect(ID.exec(e.headers['x-request-id'] as string)?.[1]).toBe(host);
    }
    expect(ids.at(-1)).toBe('d2.test');
    expect(await stack.metric('vllm_router_pd_fresh_prefills_total')).toBe(ids.length - 2);
    expect(ids.length).toBeGreaterThan(2);
  });
});
