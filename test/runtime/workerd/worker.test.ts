/**
 * The Worker end to end inside workerd: its fetch handler routes to simulated engines on loopback
 * (served by Node) through the fleet's objects (a model's pool object, the FleetObject for the
 * rest), streaming and not; a breaker opened by one request is seen by the next; admin, /metrics
 * and config errors. Client disconnects need a real HTTP client: client-disconnect.node.test.ts.
 * Sharding itself: shards.test.ts.
 */
import { createExecutionContext, SELF, waitOnExecutionContext } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { afterAll, describe, expect, it } from 'vitest';
import worker from '../../../src/adapters/cloudflare/worker.ts';
import { hasContentToken } from '../../support/sse.ts';
import {
  admin,
  callsOf,
  configureEngine,
  engineLog,
  engines,
  made,
  post,
  resetEngine,
  routerFleetStub,
  routerPoolStub,
} from './helpers.ts';

const chat = (extra: Record<string, unknown> = {}) =>
  JSON.stringify({ model: 'sim-model', messages: [{ role: 'user', content: 'Tell me a story' }], ...extra });

const objectCalls = () => callsOf(routerFleetStub());
const poolCalls = (model = 'sim-model') => callsOf(routerPoolStub(model));

const loads = async () =>
  ((await (await admin('http://router/get_loads')).json()) as { workers: { load: number }[] }).workers.map(
    (w) => w.load,
  );

const timing = async (settings: Record<string, unknown>) => {
  for (const url of [engines.a, engines.b]) {
    await configureEngine(url, settings);
    await resetEngine(url);
  }
};

describe('Worker', () => {
  afterAll(() => timing({ tokens: 16, 'ttft-ms': 2, 'itl-ms': 2 }));

  it("routes a chat completion with exactly two object calls (route, settle), both to its model's pool object", async () => {
    // The isolate's first request tells it which models have a pool object (the main object
    // passes that one on to its pool); wait for its settle.
    await (await post(chat({ max_tokens: 2 }))).arrayBuffer();
    await expect.poll(async () => (await poolCalls()).settle).toBe((await poolCalls()).route);
    const before = { main: await objectCalls(), pool: await poolCalls() };
    const res = await post(chat({ max_tokens: 8 }));
    expect(res.status).toBe(200);
    const body = (await res.json()) as { object: string; choices: { message: { content: string } }[] };
    expect(body.object).toBe('chat.completion');
    expect(body.choices[0]?.message.content.length).toBeGreaterThan(0);
    expect(res.headers.get('x-router-attempts')).toBe('1');
    expect([engines.a, engines.b]).toContain(res.headers.get('x-routed-worker-id'));
    await expect.poll(async () => (await poolCalls()).settle ?? 0).toBe((before.pool.settle ?? 0) + 1);
    expect(made(await poolCalls(), before.pool)).toEqual({ route: 1, settle: 1 });
    expect(made(await objectCalls(), before.main)).toEqual({});
    expect(await loads()).toEqual([0, 0]);
  });

  it('streams tokens as the engine produces them (first token before the engine finished)', async () => {
    await timing({ tokens: 8, 'ttft-ms': 10, 'itl-ms': 40 });
    const started = performance.now();
    const res = await post(chat({ stream: true }));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const engine = res.headers.get('x-routed-worker-id') as string;
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = '';
    let firstTokenAt: number | undefined;
    let engineDoneAtFirstToken: boolean | undefined;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
      if (firstTokenAt === undefined && hasContentToken(text)) {
        firstTokenAt = performance.now();
        engineDoneAtFirstToken = (await engineLog(engine)).some((e) => e.tEndMs !== null);
      }
    }
    const total = performance.now() - started;
    expect(engineDoneAtFirstToken).toBe(false);
    expect((firstTokenAt as number) - started).toBeLessThan(total / 2);
    expect(total).toBeGreaterThanOrEqual(7 * 40 - 20);
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
    expect(text.match(/chat\.completion\.chunk/g)?.length).toBeGreaterThanOrEqual(8);
    await expect.poll(loads).toEqual([0, 0]);
  });

  it('a breaker opened through one request is seen by the next', async () => {
    const added = await admin('http://router/workers', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ url: engines.flaky, circuit_breaker: { failure_threshold: 2 } }),
    });
    expect(added.status).toBe(201);
    const again = await admin('http://router/workers', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ url: engines.flaky }),
    });
    expect(again.status).toBe(409); // WorkerConflictError, raised in the object, across RPC
    const workerPath = `http://router/workers/${encodeURIComponent(engines.flaky)}`;
    expect(await (await admin(workerPath)).json()).toMatchObject({
      healthy: true,
      models: ['flaky-model'],
      circuit: 'closed',
    });
    try {
      await configureEngine(engines.flaky, { 'fail-mode': 'status', 'fail-status': 500 });
      await resetEngine(engines.flaky);

      // One request's retries on one engine are one failure signal: two requests open a
      // threshold-2 breaker, and the state they leave in the object is what the next one sees.
      const completion = JSON.stringify({ model: 'flaky-model', prompt: 'hi' });
      const first = await post(completion, '/v1/completions');
      expect(first.status).toBe(500); // the engine's own answer, after 2 attempts
      expect(first.headers.get('x-router-attempts')).toBe('2');
      await first.arrayBuffer();
      expect(await (await admin(workerPath)).json()).toMatchObject({ circuit: 'closed' });
      const second = await post(completion, '/v1/completions');
      expect(second.status).toBe(500);
      await second.arrayBuffer();
      expect(await engineLog(engines.flaky)).toHaveLength(4);
      // Opened in the flaky-model pool's object, which tells the main object in the background.
      await expect
        .poll(async () => ((await (await admin(workerPath)).json()) as { circuit: string }).circuit)
        .toBe('open');

      // The only worker of its pool is never taken out of rotation by its breaker (panic mode):
      // the next request still reaches it and gets the engine's own answer, not a router 503.
      const third = await post(completion, '/v1/completions');
      expect(third.status).toBe(500);
      expect(third.headers.get('x-router-error-code')).toBeNull();
      await third.arrayBuffer();
      expect((await engineLog(engines.flaky)).length).toBeGreaterThan(4);
    } finally {
      await configureEngine(engines.flaky, { 'fail-mode': 'none' });
      expect((await admin(workerPath, { method: 'DELETE' })).status).toBe(202);
    }
  });

  it('serves /metrics from the object: fleet state plus the request counts isolates shipped', async () => {
    const scrape = async () => {
      const res = await SELF.fetch('http://router/metrics');
      expect(res.headers.get('content-type')).toContain('text/plain');
      const text = await res.text();
      // A series, or (ending in `,`) the sum of the series its labels begin.
      return (series: string) =>
        text
          .split('\n')
          .filter((l) => l.startsWith(series.endsWith(',') ? series : `${series} `))
          .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
    };
    const ok = 'vllm_router_requests_total{route="/v1/chat/completions",method="POST",status="200",';
    const durations = 'vllm_router_request_duration_seconds_count{route="/v1/chat/completions",';
    const was = await scrape();
    for (let i = 0; i < 3; i++) await (await post(chat())).arrayBuffer();
    const now = await scrape();
    expect(now(ok) - was(ok)).toBe(3);
    expect(now(durations) - was(durations)).toBe(3);
    expect(now(`vllm_router_worker_health{worker="${engines.a}"}`)).toBe(1);
    expect(
      now(`vllm_router_cb_state_transitions_total{worker="${engines.flaky}",from="closed",to="open"}`),
    ).toBe(1);
    const text = await (await SELF.fetch('http://router/metrics')).text();
    expect(text.split('\n').filter((l) => l.startsWith('# TYPE vllm_router_requests_total ')).length).toBe(1);
  });

  it('reaches the object for /v1/models, /health and /finish_session', async () => {
    const models = (await (await SELF.fetch('http://router/v1/models')).json()) as { data: { id: string }[] };
    expect(models.data.map((m) => m.id)).toEqual(['sim-model']);
    expect((await SELF.fetch('http://router/health')).status).toBe(200);

    // The config's policy is sticky_least_loaded: a session is pinned in the object, and
    // /finish_session must release it there (its session gauges drop), not just echo the id.
    const session = `finish-${crypto.randomUUID()}`;
    const pinned = async (worker: string) => {
      const text = await (await SELF.fetch('http://router/metrics')).text();
      const series = `vllm_router_sll_pinned_sessions{worker="${worker}"}`;
      const line = text.split('\n').find((l) => l.startsWith(`${series} `));
      return line === undefined ? 0 : Number(line.slice(series.length + 1));
    };
    const inSession = async () => {
      const res = await SELF.fetch('http://router/v1/chat/completions', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-session-id': session },
        body: chat({ max_tokens: 2 }),
      });
      expect(res.status).toBe(200);
      await res.arrayBuffer();
      return res.headers.get('x-routed-worker-id') as string;
    };
    const before = { [engines.a]: await pinned(engines.a), [engines.b]: await pinned(engines.b) };
    const worker = await inSession();
    expect([engines.a, engines.b]).toContain(worker);
    expect(await inSession()).toBe(worker); // sticky
    expect(await pinned(worker)).toBe((before[worker] ?? 0) + 1);

    const finished = await SELF.fetch(`http://router/finish_session?session_id=${session}`, {
      method: 'POST',
    });
    expect(await finished.json()).toEqual({ session_id: session, finished: true });
    expect(await pinned(worker)).toBe(before[worker] ?? 0); // released in the object
    const again = await SELF.fetch(`http://router/finish_session?session_id=${session}`, { method: 'POST' });
    expect(await again.json()).toEqual({ session_id: session, finished: true }); // idempotent
    expect(await pinned(worker)).toBe(before[worker] ?? 0);

    // Its next request is placed afresh: pinned again, once.
    const placed = await inSession();
    expect(await pinned(placed)).toBe((before[placed] ?? 0) + 1);
  });

  it('answers 500 naming the field when ROUTER_CONFIG is invalid', async () => {
    const call = async (ROUTER_CONFIG: string) => {
      const ctx = createExecutionContext();
      const res = await worker.fetch(new Request('http://router/v1/models'), { ...env, ROUTER_CONFIG }, ctx);
      await waitOnExecutionContext(ctx);
      return { status: res.status, body: (await res.json()) as { error: { message: string } } };
    };
    const bad = await call('{"retry": {"maxRetries": 0}}');
    expect(bad.status).toBe(500);
    expect(bad.body.error.message).toContain('retry.maxRetries');
    const notJson = await call('{retry');
    expect(notJson.status).toBe(500);
    expect(notJson.body.error.message).toContain('ROUTER_CONFIG: not valid JSON');
  });
});
