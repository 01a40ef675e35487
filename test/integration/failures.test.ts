import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../support/fake-clock.ts';
import { engineRequests, type Running, startStack } from '../support/harness.ts';

const chat = (extra: Record<string, unknown> = {}) =>
  JSON.stringify({ model: 'sim-model', messages: [{ role: 'user', content: 'Tell me a story' }], ...extra });

async function readAll(res: Response): Promise<{ text: string; error?: unknown }> {
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let text = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { text };
      text += decoder.decode(value, { stream: true });
    }
  } catch (error) {
    return { text, error };
  }
}

async function loadsOf(stack: Running): Promise<number[]> {
  return stack.router.fleet.listWorkers().map((w) => w.load);
}

describe('failures between router and engine', () => {
  let stack: Running | undefined;
  afterEach(async () => {
    await stack?.stop();
    stack = undefined;
  });

  it('cancels the engine request when the client leaves mid-stream, and releases the lease', async () => {
    stack = await startStack({ engines: 1, engineOptions: { tokens: 200, ttftMs: 5, itlMs: 20 } });
    const controller = new AbortController();
    const res = await fetch(`${stack.router.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: chat({ stream: true }),
      signal: controller.signal,
    });
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    controller.abort();
    const engine = stack.engines[0]?.engine;
    const entry = await engine?.waitForLog((e) => e.aborted);
    expect(entry?.completed).toBe(false);
    expect(entry?.tokensSent).toBeLessThan(200);
    expect(await loadsOf(stack)).toEqual([0]);
    // A client that leaves is nobody's failure: not the engine's breaker, not a broken stream.
    await expect
      .poll(async () => (await fetch(`${stack!.router.url}/metrics`)).text())
      .toContain(`vllm_router_cb_outcomes_total{worker="${stack.engines[0]?.url}",outcome="aborted"} 1`);
    const metrics = await (await fetch(`${stack.router.url}/metrics`)).text();
    expect(metrics).not.toContain('outcome="failure"');
    expect(metrics).not.toMatch(/vllm_router_stream_errors_total\{[^}]*\} [1-9]/);
  });

  it('cancels the engine request when the client leaves before the response headers', async () => {
    stack = await startStack({ engines: 1, engineOptions: { failure: { mode: 'hang' } } });
    const controller = new AbortController();
    const pending = fetch(`${stack.router.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: chat(),
      signal: controller.signal,
    }).catch((e: unknown) => e);
    const engine = stack.engines[0]?.engine;
    await engine?.waitForLog(() => true);
    controller.abort();
    await pending;
    const entry = await engine?.waitForLog((e) => e.aborted);
    expect(entry?.status).toBeNull();
    await expect.poll(() => loadsOf(stack as Running)).toEqual([0]);
  });

  it('ends a stream cut by the engine with an SSE error event and no [DONE]', async () => {
    stack = await startStack({
      engines: 1,
      engineOptions: { tokens: 10, failure: { mode: 'midstream', cutAfterChunks: 3 } },
    });
    const res = await fetch(`${stack.router.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: chat({ stream: true }),
    });
    expect(res.status).toBe(200);
    const { text, error } = await readAll(res);
    expect(error).toBeUndefined();
    expect(text).toContain('chat.completion.chunk');
    expect(text).not.toContain('[DONE]');
    const events = text.trim().split('\n\n');
    const last = JSON.parse((events.at(-1) as string).replace(/^data: /, '')) as { error: { type: string } };
    expect(last.error.type).toBe('upstream_stream_error');
    expect(await loadsOf(stack)).toEqual([0]);
    const metrics = await (await fetch(`${stack.router.url}/metrics`)).text();
    expect(metrics).toContain(`vllm_router_stream_errors_total{worker="${stack.engines[0]?.url}"} 1`);
  });

  it('never turns a truncated non-streaming body into a clean answer', async () => {
    // The engine promises a content-length, sends half of it, then cuts the connection. The Node
    // transport reads such a small body whole before answering, so the cut is seen before any
    // byte reaches the client: a 502 upstream_body_error, never a clean short 200, and never
    // retried (the engine already generated an answer; a resend would be a second generation).
    stack = await startStack({ engines: 1, engineOptions: { tokens: 10, failure: { mode: 'midstream' } } });
    const res = await fetch(`${stack.router.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: chat(),
    });
    const { text, error } = await readAll(res);
    expect(error).toBeUndefined(); // a complete error answer, not a broken body
    expect(res.status).toBe(502);
    expect(res.headers.get('x-router-error-code')).toBe('upstream_body_error');
    expect(res.headers.get('x-routed-worker-id')).toBe(stack.engines[0]?.url);
    expect(res.headers.get('x-router-attempts')).toBe('1');
    const body = JSON.parse(text) as { error: { code: string; type: string; message: string } };
    expect(body.error).toMatchObject({ code: 'upstream_body_error', type: 'upstream_error' });
    expect(body.error.message).toContain('broke after its status');
    expect(engineRequests(stack.engines).filter((e) => e.path === '/v1/chat/completions')).toHaveLength(1);
    expect(await loadsOf(stack)).toEqual([0]);
  });

  it('answers 502 upstream_unreachable when the engine resets the connection', async () => {
    stack = await startStack({ engines: 1, engineOptions: { failure: { mode: 'reset' } } });
    const res = await fetch(`${stack.router.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: chat(),
    });
    expect(res.status).toBe(502);
    expect(res.headers.get('x-router-error-code')).toBe('upstream_unreachable');
    expect(res.headers.get('x-routed-worker-id')).toBe(stack.engines[0]?.url);
    expect(await loadsOf(stack)).toEqual([0]);
  });

  it('passes an engine error status through unchanged', async () => {
    stack = await startStack({
      engines: 1,
      engineOptions: { failure: { mode: 'status', status: 503, body: 'engine-says-no', retryAfter: '2' } },
      config: { retry: { disabled: true } },
    });
    const res = await fetch(`${stack.router.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: chat(),
    });
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('2');
    expect(res.headers.get('x-router-error-code')).toBeNull();
    expect(await res.text()).toBe('engine-says-no');
  });

  it('gives up after --request-timeout-secs with 504 (fake clock, no sleeping)', async () => {
    const clock = new FakeClock();
    stack = await startStack({
      engines: 1,
      engineOptions: { failure: { mode: 'hang' } },
      config: { server: { requestTimeoutSecs: 30 } },
      router: { clock },
    });
    const pending = fetch(`${stack.router.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: chat(),
    });
    const engine = stack.engines[0]?.engine;
    await engine?.waitForLog(() => true);
    clock.advance(29_999);
    expect(engineRequests(stack.engines)[0]?.aborted).toBe(false);
    clock.advance(1);
    const res = await pending;
    expect(res.status).toBe(504);
    expect(res.headers.get('x-router-error-code')).toBe('upstream_timeout');
    expect((await engine?.waitForLog((e) => e.aborted))?.aborted).toBe(true);
    expect(await loadsOf(stack)).toEqual([0]);
  });
});
