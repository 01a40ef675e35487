import { afterEach, describe, expect, it } from 'vitest';
import { startNodeRouter } from '../../src/adapters/node/server.ts';
import { driveClock, FakeClock, seededRandom } from '../support/fake-clock.ts';
import { engineRequests, type Running, startEngines, startStack, testConfig } from '../support/harness.ts';
import { deadPort, endless503Server, staleConnectionServer } from '../support/net.ts';

const chatBody = JSON.stringify({
  model: 'sim-model',
  messages: [{ role: 'user', content: 'hi' }],
  max_tokens: 4,
});

function post(url: string, init: { body?: BodyInit; headers?: Record<string, string>; path?: string } = {}) {
  return fetch(`${url}${init.path ?? '/v1/chat/completions'}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...init.headers },
    body: init.body ?? chatBody,
  });
}

/** The backoff sleeps the router asked for (the request deadline timer left out). */
const sleeps = (clock: FakeClock) => clock.requested.filter((ms) => ms < 60_000);

async function metric(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(name));
  return line ? Number(line.split(' ').at(-1)) : 0;
}

describe('retries over loopback with engines answering real statuses', () => {
  let stack: Running | undefined;
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    await stack?.stop();
    stack = undefined;
    for (const c of cleanups.splice(0)) await c();
  });

  async function start(options: Parameters<typeof startStack>[0] & { seed?: number }) {
    const clock = new FakeClock();
    stack = await startStack({ ...options, router: { clock, random: seededRandom(options.seed ?? 1) } });
    clock.requested.length = 0; // startup timers (model discovery) are not backoffs
    return { stack, clock };
  }

  it('makes a single attempt when retries are disabled', async () => {
    const { stack } = await start({
      engines: 1,
      engineOptions: { failure: { mode: 'status', status: 503, first: 3 } },
      config: { retry: { disabled: true } },
    });
    const res = await post(stack.router.url);
    expect(res.status).toBe(503);
    expect(res.headers.get('x-router-attempts')).toBe('1');
    expect(engineRequests(stack.engines)).toHaveLength(1);
  });

  it('absorbs 503, 503, 503 from a single engine: 200 after 4 attempts with the backoff sequence', async () => {
    const { stack, clock } = await start({
      engines: 1,
      engineOptions: { failure: { mode: 'status', status: 503, first: 3 } },
      seed: 5,
    });
    const res = await driveClock(clock, post(stack.router.url));
    expect(res.status).toBe(200);
    expect(res.headers.get('x-router-attempts')).toBe('4');
    const draws = seededRandom(5);
    const expected = [50, 75, 112.5].map((base) => base * (1 + 0.2 * (2 * draws() - 1)));
    const got = sleeps(clock);
    expect(got).toHaveLength(3);
    got.forEach((ms, i) => {
      expect(ms).toBeCloseTo(expected[i] as number, 6);
    });
    expect(engineRequests(stack.engines).map((e) => e.status)).toEqual([503, 503, 503, 200]);
    expect(await metric(stack.router.url, 'vllm_router_retries_total{route="/v1/chat/completions"}')).toBe(3);
    expect(stack.router.fleet.listWorkers()[0]?.load).toBe(0);
  });

  it('reroutes a transport failure at once, with no backoff, to the other engine', async () => {
    const [engine] = await startEngines(1);
    const dead = `http://127.0.0.1:${await deadPort()}`;
    const clock = new FakeClock();
    const router = await startNodeRouter(testConfig([dead, engine!.url], { health: { disabled: true } }), {
      clock,
      logSink: () => {},
    });
    cleanups.push(async () => {
      await router.close(0);
      await engine!.close();
    });
    clock.requested.length = 0;
    const res = await post(router.url);
    expect(res.status).toBe(200);
    expect(res.headers.get('x-router-attempts')).toBe('2');
    expect(res.headers.get('x-routed-worker-id')).toBe(engine!.url);
    expect(sleeps(clock)).toEqual([]);
  });

  it('backs off only once every candidate has failed, then gives up with 502 after the attempt limit', async () => {
    const deadA = `http://127.0.0.1:${await deadPort()}`;
    const deadB = `http://127.0.0.1:${await deadPort()}`;
    const clock = new FakeClock();
    const router = await startNodeRouter(
      testConfig([deadA, deadB], { retry: { maxRetries: 5 }, health: { disabled: true } }),
      {
        clock,
        logSink: () => {},
      },
    );
    cleanups.push(() => router.close(0));
    clock.requested.length = 0;
    const res = await driveClock(clock, post(router.url));
    expect(res.status).toBe(502);
    expect(res.headers.get('x-router-error-code')).toBe('upstream_unreachable');
    expect(res.headers.get('x-router-attempts')).toBe('5');
    // A, B (both excluded) → backoff → A, B → backoff → A
    expect(sleeps(clock)).toHaveLength(2);
  });

  it('when the budget is spent, passes the engine’s own response through', async () => {
    const { stack } = await start({
      engines: 1,
      engineOptions: { failure: { mode: 'status', status: 503, body: 'engine-says-no', retryAfter: '1' } },
      config: { retry: { budgetRatio: 0, budgetMinPerSec: 0 } },
    });
    const res = await post(stack.router.url);
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(res.headers.get('x-router-error-code')).toBeNull();
    expect(await res.text()).toBe('engine-says-no');
    expect(res.headers.get('x-router-attempts')).toBe('1');
    expect(await metric(stack.router.url, 'vllm_router_retries_budget_exhausted_total')).toBe(1);
  });

  it('returns a non-retryable 400 on the first attempt', async () => {
    const { stack } = await start({
      engines: 2,
      engineOptions: { failure: { mode: 'status', status: 400 } },
    });
    const res = await post(stack.router.url);
    expect(res.status).toBe(400);
    expect(res.headers.get('x-router-attempts')).toBe('1');
    expect(engineRequests(stack.engines)).toHaveLength(1);
  });

  it('honours Retry-After when it fits, and passes the response through when it is too long', async () => {
    const { stack, clock } = await start({
      engines: 1,
      engineOptions: { failure: { mode: 'status', status: 429, first: 1, retryAfter: '2' } },
    });
    const ok = await driveClock(clock, post(stack.router.url));
    expect(ok.status).toBe(200);
    expect(sleeps(clock)).toEqual([2000]);

    stack.engines[0]!.engine.configure({
      failure: { mode: 'status', status: 503, first: 1, retryAfter: '120' },
    });
    const refused = await driveClock(clock, post(stack.router.url));
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('120');
    expect(refused.headers.get('x-router-attempts')).toBe('1');
  });

  it('releases what it discards: the engine finished every discarded answer and no lease is left', async () => {
    const { stack, clock } = await start({
      engines: 1,
      engineOptions: { failure: { mode: 'status', status: 500, first: 2 } },
    });
    const res = await driveClock(clock, post(stack.router.url));
    expect(res.status).toBe(200);
    await res.text();
    const log = engineRequests(stack.engines);
    expect(log.map((e) => [e.status, e.completed])).toEqual([
      [500, true],
      [500, true],
      [200, true],
    ]);
    expect(stack.router.fleet.listWorkers()[0]?.load).toBe(0);
    expect(stack.engines[0]!.engine.stats().running).toBe(0);
  });

  it('cancels a discarded streaming body so its connection is released', async () => {
    const engine = await endless503Server();
    const clock = new FakeClock();
    const router = await startNodeRouter(
      testConfig([engine.url], { workers: { models: ['sim-model'] }, health: { disabled: true } }),
      {
        clock,
        logSink: () => {},
      },
    );
    cleanups.push(async () => {
      await router.close(0);
      await engine.close();
    });
    const res = await driveClock(clock, post(router.url));
    expect(res.status).toBe(200);
    expect(res.headers.get('x-router-attempts')).toBe('2');
    await engine.firstClosed; // never resolves if the router keeps reading (or holding) the 503's body
    expect(router.fleet.listWorkers()[0]?.load).toBe(0);
  });

  it('never retries once the first byte has been streamed', async () => {
    const { stack } = await start({
      engines: 2,
      engineOptions: { tokens: 8, failure: { mode: 'midstream', cutAfterChunks: 2 } },
    });
    const res = await post(stack.router.url, {
      body: JSON.stringify({ model: 'sim-model', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    const text = await res.text();
    expect(res.headers.get('x-router-attempts')).toBe('1');
    expect(text).toContain('upstream_stream_error');
    expect(engineRequests(stack.engines)).toHaveLength(1);
  });

  it('sends a body over --max-buffered-request-bytes with a single attempt', async () => {
    const { stack } = await start({
      engines: 1,
      engineOptions: { failure: { mode: 'status', status: 503, first: 1 } },
      config: { retry: { maxBufferedRequestBytes: 1000 } },
    });
    const res = await post(stack.router.url, {
      path: '/v1/audio/transcriptions',
      headers: { 'content-type': 'application/octet-stream' },
      body: new Uint8Array(5000).fill(65),
    });
    expect(res.status).toBe(503);
    expect(res.headers.get('x-router-attempts')).toBe('1');
    expect(await metric(stack.router.url, 'vllm_router_retry_forfeited_total')).toBe(1);
    const small = await post(stack.router.url, {
      path: '/v1/audio/transcriptions',
      headers: { 'content-type': 'application/octet-stream' },
      body: new Uint8Array(500).fill(65),
    });
    expect(small.headers.get('x-routed-worker-id')).toBe(stack.engines[0]!.url);
  });

  it('caps the attempts per request with the budget under a total outage', async () => {
    const { stack, clock } = await start({
      engines: 1,
      engineOptions: { failure: { mode: 'status', status: 503 } },
      config: { retry: { budgetRatio: 0.2, budgetMinPerSec: 1 }, circuitBreaker: { disabled: true } },
    });
    for (let i = 0; i < 50; i++) {
      const res = await driveClock(clock, post(stack.router.url));
      expect(res.status).toBe(503);
      await res.text();
    }
    // 50 first attempts + at most max(0.2 × 50, 1/s × 10 s) = 10 retries, instead of 250 attempts.
    expect(engineRequests(stack.engines).length).toBe(60);
  });

  it('resends once, at once and for free, when a pooled connection turns out to be closed', async () => {
    const stale = await staleConnectionServer();
    const router = await startNodeRouter(
      testConfig([stale.url], {
        workers: { models: ['sim-model'] },
        retry: { disabled: true },
        health: { disabled: true },
        policy: { name: 'cache_aware' }, // reads the body, so it is buffered (round_robin streams it)
      }),
      { logSink: () => {} },
    );
    cleanups.push(async () => {
      await router.close(0);
      await stale.close();
    });
    const first = await post(router.url);
    expect(first.status).toBe(200);
    await first.text();
    const second = await post(router.url);
    expect(second.status).toBe(200);
    expect(second.headers.get('x-router-attempts')).toBe('1');
    expect(stale.requests()).toBe(3);
    expect(await metric(router.url, 'vllm_router_stale_connection_resends_total')).toBe(1);
  });
});
