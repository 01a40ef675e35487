import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engineRequests, type Running, startStack } from '../support/harness.ts';

// Streaming token timing is covered by test/runtime/scenarios.ts (Node and Deno processes).

const chat = (extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    model: 'sim-model',
    messages: [{ role: 'user', content: 'Hello there' }],
    max_tokens: 8,
    ...extra,
  });

describe('proxying to simulated engines', () => {
  let stack: Running;
  beforeAll(async () => {
    stack = await startStack({ engines: 2, engineOptions: { tokens: 8, ttftMs: 10, itlMs: 40 } });
  });
  afterAll(() => stack.stop());

  it('forwards a non-streaming chat completion and reports where it went', async () => {
    const res = await fetch(`${stack.router.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: chat(),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { object: string; choices: { message: { content: string } }[] };
    expect(body.object).toBe('chat.completion');
    expect(body.choices[0]?.message.content.length).toBeGreaterThan(0);
    const worker = res.headers.get('x-routed-worker-id');
    expect(stack.engines.map((e) => e.url)).toContain(worker);
    expect(res.headers.get('x-sim-engine')).toBe(stack.engines.find((e) => e.url === worker)?.engine.id);
    expect(res.headers.get('x-router-attempts')).toBe('1');
  });

  it('round-robins across the engines at the same path', async () => {
    for (const e of stack.engines) e.engine.reset();
    for (let i = 0; i < 6; i++) {
      const res = await fetch(`${stack.router.url}/v1/completions?x=1`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'sim-model', prompt: 'hi', max_tokens: 2 }),
      });
      expect(res.status).toBe(200);
      await res.arrayBuffer();
    }
    expect(stack.engines.map((e) => e.engine.log.length)).toEqual([3, 3]);
    expect(stack.engines[0]?.engine.log[0]?.path).toBe('/v1/completions');
  });

  it('takes the request id from the configured headers, forwards it and returns it', async () => {
    for (const e of stack.engines) e.engine.reset();
    const given = await fetch(`${stack.router.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': 'req-abc' },
      body: chat(),
    });
    await given.arrayBuffer();
    expect(given.headers.get('x-request-id')).toBe('req-abc');

    const correlated = await fetch(`${stack.router.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-correlation-id': 'corr-1' },
      body: chat(),
    });
    await correlated.arrayBuffer();
    expect(correlated.headers.get('x-request-id')).toBe('corr-1');

    const generated = await fetch(`${stack.router.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: chat(),
    });
    await generated.arrayBuffer();
    const id = generated.headers.get('x-request-id') as string;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);

    const seen = engineRequests(stack.engines).map((e) => e.headers['x-request-id']);
    expect(seen.sort()).toEqual(['corr-1', id, 'req-abc'].sort());
  });

  it('drops hop-by-hop headers (and those named by Connection) but forwards the rest', async () => {
    for (const e of stack.engines) e.engine.reset();
    const { request } = await import('node:http');
    const url = new URL(`${stack.router.url}/v1/chat/completions`);
    const body = chat();
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
            connection: 'keep-alive, x-hop-only',
            'x-hop-only': 'secret',
            'proxy-authorization': 'Basic abc',
            te: 'trailers',
            'x-pass-through': 'yes',
          },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
    expect(status).toBe(200);
    const [entry] = engineRequests(stack.engines);
    expect(entry?.headers['x-pass-through']).toBe('yes');
    expect(entry?.headers['x-hop-only']).toBeUndefined();
    expect(entry?.headers['proxy-authorization']).toBeUndefined();
    expect(entry?.headers.te).toBeUndefined();
  });

  it('serves the union of models, the probes and Prometheus metrics (also on the metrics listener)', async () => {
    const models = (await (await fetch(`${stack.router.url}/v1/models`)).json()) as {
      data: { id: string }[];
    };
    expect(models.data.map((m) => m.id)).toEqual(['sim-model']);
    expect((await fetch(`${stack.router.url}/liveness`)).status).toBe(200);
    expect((await fetch(`${stack.router.url}/readiness`)).status).toBe(200);
    const health = await fetch(`${stack.router.url}/health`);
    expect(health.status).toBe(200);
    for (const url of [`${stack.router.url}/metrics`, stack.router.metricsUrl as string]) {
      const text = await (await fetch(url)).text();
      expect(text).toMatch(
        /vllm_router_requests_total\{route="\/v1\/chat\/completions",method="POST",status="200",model="sim-model"\} \d+/,
      );
      expect(text).toContain(
        'vllm_router_request_duration_seconds_bucket{route="/v1/chat/completions",model="sim-model",le="0.001"}',
      );
      for (const e of stack.engines) {
        expect(text).toMatch(new RegExp(`vllm_router_processed_requests_total\\{worker="${e.url}"\\} [1-9]`));
        expect(text).toContain(`vllm_router_running_requests{worker="${e.url}"} 0`);
      }
    }
  });
});
