import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engineRequests, type Running, startStack } from '../support/harness.ts';

type ErrorBody = { error: { message: string; type: string; code: string; param: string | null } };

describe('bad input never reaches an engine', () => {
  let stack: Running;
  beforeAll(async () => {
    stack = await startStack({ engines: 2, config: { server: { maxPayloadSize: 2000 } } });
  });
  afterAll(() => stack.stop());

  const post = (body: BodyInit, headers: Record<string, string> = {}, path = '/v1/chat/completions') =>
    fetch(`${stack.router.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
      ...(body instanceof ReadableStream ? { duplex: 'half' } : {}),
    } as RequestInit);

  it('answers malformed JSON with 400 in the OpenAI error shape', async () => {
    const res = await post('{"model": "sim-model", "messages": [');
    expect(res.status).toBe(400);
    expect(res.headers.get('x-router-error-code')).toBe('invalid_json');
    const body = (await res.json()) as ErrorBody;
    expect(body.error.type).toBe('invalid_request_error');
    expect(body.error.code).toBe('invalid_json');
    expect(res.headers.get('x-request-id')).toBeTruthy();
  });

  it('rejects an empty body, a non-object body and a non-string model with 400', async () => {
    expect((await post('')).status).toBe(400);
    expect((await post('[1,2]')).status).toBe(400);
    const res = await post(JSON.stringify({ model: 42, messages: [] }));
    expect(res.status).toBe(400);
    expect(((await res.json()) as ErrorBody).error.param).toBe('model');
  });

  it('answers a body over --max-payload-size with 413, declared or chunked', async () => {
    const big = JSON.stringify({ model: 'sim-model', prompt: 'x'.repeat(5000) });
    const declared = await post(big, {}, '/v1/completions');
    expect(declared.status).toBe(413);
    expect(declared.headers.get('x-router-error-code')).toBe('payload_too_large');
    const bytes = new TextEncoder().encode(big);
    const chunked = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < bytes.length; i += 1000) controller.enqueue(bytes.slice(i, i + 1000));
        controller.close();
      },
    });
    const res = await post(chunked, {}, '/v1/completions');
    expect(res.status).toBe(413);
  });

  it('answers an unknown model with 404 listing the served models', async () => {
    const res = await post(JSON.stringify({ model: 'gpt-17', messages: [{ role: 'user', content: 'hi' }] }));
    expect(res.status).toBe(404);
    const body = (await res.json()) as ErrorBody;
    expect(body.error.code).toBe('model_not_found');
    expect(body.error.message).toContain('gpt-17');
    expect(body.error.message).toContain('sim-model');
  });

  it('sent nothing to the engines, and keeps serving', async () => {
    expect(engineRequests(stack.engines)).toEqual([]);
    const ok = await post(
      JSON.stringify({ model: 'sim-model', messages: [{ role: 'user', content: 'hi' }] }),
    );
    expect(ok.status).toBe(200);
    const metrics = await (await fetch(`${stack.router.url}/metrics`)).text();
    expect(metrics).toMatch(
      /vllm_router_request_errors_total\{route="\/v1\/chat\/completions",error_type="invalid_json",model=""\} [1-9]/,
    );
  });

  it('answers 404 in the OpenAI shape for an unknown route', async () => {
    const res = await fetch(`${stack.router.url}/nope`);
    expect(res.status).toBe(404);
    expect(((await res.json()) as ErrorBody).error.code).toBe('not_found');
  });
});

describe('no workers', () => {
  let stack: Running;
  beforeAll(async () => {
    stack = await startStack({ engines: 0 });
  });
  afterAll(() => stack.stop());

  it('answers 503 no_available_workers, and readiness says not ready', async () => {
    const res = await fetch(`${stack.router.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim-model', messages: [] }),
    });
    expect(res.status).toBe(503);
    expect(res.headers.get('x-router-error-code')).toBe('no_available_workers');
    expect((await fetch(`${stack.router.url}/readiness`)).status).toBe(503);
    expect((await fetch(`${stack.router.url}/health`)).status).toBe(503);
    expect((await fetch(`${stack.router.url}/liveness`)).status).toBe(200);
  });
});
