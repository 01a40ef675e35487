/**
 * Stopping the Node router over real loopback HTTP, step by step as the command runs it
 * (src/core/cli.ts sequences them with its clock; test/unit/cli.test.ts checks that): readiness 503
 * while requests are still served (`beginDrain`), no new connections while the requests in flight
 * go on (`stopAccepting`), and the cut at the end of the grace period (`shutdown`): a stream still
 * running gets the final SSE error event of type `shutdown` (the OpenAI SDK raises it), a request
 * not answered yet gets a 503 `shutdown` error, the engine requests are cancelled, and the log
 * says `shutdown`, not `client_disconnected`.
 */
import OpenAI, { APIError } from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { type Running, startStack } from '../support/harness.ts';

interface LogLine {
  level: string;
  msg: string;
  [field: string]: unknown;
}

let stack: Running | undefined;
afterEach(async () => {
  await stack?.stop();
  stack = undefined;
});

async function start(engineOptions: Parameters<typeof startStack>[0]['engineOptions']) {
  stack = await startStack({ engines: 1, engineOptions, config: { log: { level: 'info', json: true } } });
  const client = new OpenAI({ baseURL: `${stack.router.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  const logs = () => (stack?.logs ?? []).map((l) => JSON.parse(l) as LogLine);
  return { stack, client, logs };
}

const messages = [{ role: 'user' as const, content: 'Tell me a long story' }];

describe('shutdown', () => {
  it('beginDrain: /readiness answers 503 shutting_down, requests are still served', async () => {
    const { stack, client } = await start({ tokens: 3 });
    stack.router.beginDrain();
    const ready = await fetch(`${stack.router.url}/readiness`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toMatchObject({ status: 'not_ready', reason: 'shutting_down' });
    const answer = await client.chat.completions.create({ model: 'sim-model', messages });
    expect(answer.choices[0]?.finish_reason).toBe('stop');
  });

  it('stopAccepting: new connections are refused while the stream in flight goes on to [DONE]', async () => {
    const { stack } = await start({ tokens: 10, ttftMs: 5, itlMs: 20 });
    const res = await fetch(`${stack.router.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', connection: 'close' },
      body: JSON.stringify({ model: 'sim-model', stream: true, messages }),
    });
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    const closed = stack.router.stopAccepting();
    await expect(fetch(`${stack.router.url}/liveness`)).rejects.toThrow();
    let text = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
    await closed;
    expect(stack.engines[0]!.engine.log[0]?.completed).toBe(true);
  });

  it('the grace period over: the stream gets the shutdown event (no [DONE]), logged as shutdown', async () => {
    const { stack, client, logs } = await start({ tokens: 400, ttftMs: 5, itlMs: 25 });
    const stream = await client.chat.completions.create({ model: 'sim-model', stream: true, messages });
    const received: string[] = [];
    let drained: Promise<boolean> | undefined;
    const read = (async () => {
      for await (const chunk of stream) {
        received.push(chunk.choices[0]?.delta.content ?? '');
        drained ??= stack.router.drain(50);
      }
    })();
    const error = await read.then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(APIError);
    expect((error as APIError).message).toContain('router shutting down');
    expect((error as APIError).type).toBe('shutdown');
    expect(await drained).toBe(false);
    expect(received.length).toBeLessThan(400);
    const entry = await stack.engines[0]!.engine.waitForLog((e) => e.aborted);
    expect(entry.completed).toBe(false);
    const request = logs().find((l) => l.msg === 'request');
    expect(request).toMatchObject({ status: 200, stream: true, error: 'shutdown' });
    expect(logs().find((l) => l.msg === 'stream cut by the shutdown')).toMatchObject({ level: 'warn' });
    expect(JSON.stringify(logs())).not.toContain('client_disconnected');
  });

  it('the grace period over: a request not answered yet gets 503 shutdown; the engine request is cancelled', async () => {
    const { stack, client, logs } = await start({ failure: { mode: 'hang' } });
    const pending = client.chat.completions.create({ model: 'sim-model', messages }).then(
      () => undefined,
      (err: unknown) => err,
    );
    await stack.engines[0]!.engine.waitForLog(() => true);
    expect(await stack.router.drain(50)).toBe(false);
    const error = await pending;
    expect(error).toBeInstanceOf(APIError);
    expect((error as APIError).status).toBe(503);
    expect((error as APIError).code).toBe('shutdown');
    expect((await stack.engines[0]!.engine.waitForLog((e) => e.aborted)).status).toBeNull();
    expect(logs().find((l) => l.msg === 'request')).toMatchObject({ status: 503, error: 'shutdown' });
    // Not retried elsewhere, not held against the engine.
    expect(stack.engines[0]!.engine.log).toHaveLength(1);
  });

  it('requests finishing within the grace period: drain resolves true, nothing is cut', async () => {
    const { stack, client, logs } = await start({ tokens: 5, ttftMs: 5, itlMs: 10 });
    const stream = await client.chat.completions.create({ model: 'sim-model', stream: true, messages });
    let drained: Promise<boolean> | undefined;
    let chunks = 0;
    for await (const _chunk of stream) {
      chunks++;
      drained ??= stack.router.drain(10_000);
    }
    expect(chunks).toBeGreaterThanOrEqual(5);
    expect(await drained).toBe(true);
    expect(logs().find((l) => l.msg === 'request')).not.toHaveProperty('error');
  });
});
