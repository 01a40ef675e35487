/**
 * A client that breaks off while sending its body, declared (Content-Length) or chunked: the router
 * records a 400 for it, logs no unhandled error, sends nothing to an engine and keeps serving.
 */
import { connect } from 'node:net';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engineRequests, type Running, startStack } from '../support/harness.ts';

/** Sends the head and part of a body on a raw connection, then closes it. */
function cutOff(url: string, head: string, part: string): Promise<void> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => {
      socket.write(`${head}\r\n\r\n${part}`, () => {
        socket.destroy();
        resolve();
      });
    });
    socket.on('error', reject);
  });
}

async function rejected400(stack: Running): Promise<number> {
  const text = await stack.router.metrics.render();
  const line = text
    .split('\n')
    .find((l) => l.startsWith('vllm_router_requests_total{') && l.includes('status="400"'));
  return line === undefined ? 0 : Number(line.split(' ').pop());
}

describe('a request body cut off by its client', () => {
  let stack: Running;
  beforeAll(async () => {
    // The default policy (cache_aware), as users run it.
    stack = await startStack({ engines: 2, config: { policy: { name: 'cache_aware' } } });
  });
  afterAll(() => stack.stop());

  it('is a 400 for the router, never an unhandled error, and never reaches an engine', async () => {
    const { host } = new URL(stack.router.url);
    const start = `POST /v1/chat/completions HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json`;
    // Bodies that share one long system prompt, cut off before they end, several at once.
    const system = `{"model":"sim-model","messages":[{"role":"system","content":"${'You are a careful assistant. '.repeat(40)}`;
    const chunk = (text: string) => `${text.length.toString(16)}\r\n${text}\r\n`;
    await Promise.all([
      cutOff(stack.router.url, `${start}\r\nContent-Length: 5000`, system),
      cutOff(stack.router.url, `${start}\r\nContent-Length: 5000`, `${system}Be brief.`),
      cutOff(stack.router.url, `${start}\r\nTransfer-Encoding: chunked`, chunk(system)),
      cutOff(stack.router.url, `${start}\r\nTransfer-Encoding: chunked`, chunk(`${system}Be kind.`)),
    ]);
    await expect.poll(() => rejected400(stack)).toBe(4);
    expect(stack.logs.filter((l) => l.includes('unhandled error'))).toEqual([]);
    expect(engineRequests(stack.engines)).toEqual([]);
    const client = new OpenAI({ baseURL: `${stack.router.url}/v1`, apiKey: 'none', maxRetries: 0 });
    const { response } = await client.chat.completions
      .create({ model: 'sim-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 })
      .withResponse();
    expect(response.status).toBe(200);
  });
});
