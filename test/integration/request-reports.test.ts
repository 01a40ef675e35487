/**
 * Every request reported exactly once on Node, whose host reports a request after the I/O turn
 * that answered it (src/adapters/node/turn-reports.ts): the default policy, prompts sharing a long
 * system prompt, many requests at once, streamed and not, through the official openai SDK. Each
 * answered request is one metric sample, its tokens counted, one log line with its request id, and
 * the engines' load back at zero; /metrics read right after the answers already shows them.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metricSum, type Running, startStack } from '../support/harness.ts';

const SYSTEM = `You are the support assistant of a GPU cloud. ${'Answer briefly and politely. '.repeat(120)}`;
const CLIENTS = 24;
const TOKENS = 5;

describe('request reports on Node (metrics, tokens, log line), many requests at once', () => {
  let stack: Running;
  let client: OpenAI;
  beforeAll(async () => {
    stack = await startStack({
      engines: 2,
      engineOptions: { tokens: TOKENS, ttftMs: 2, itlMs: 1 },
      config: { policy: { name: 'cache_aware' }, log: { level: 'info', json: true } },
    });
    client = new OpenAI({ baseURL: `${stack.router.url}/v1`, apiKey: 'sk-test', maxRetries: 0 });
  });
  afterAll(() => stack.stop());

  async function ask(i: number): Promise<string> {
    const messages = [
      { role: 'system' as const, content: SYSTEM },
      { role: 'user' as const, content: `Question ${i}: is my node up?` },
    ];
    if (i % 2 === 0) {
      const { data, response } = await client.chat.completions
        .create({ model: 'sim-model', messages })
        .withResponse();
      expect(data.usage?.completion_tokens).toBe(TOKENS);
      return response.headers.get('x-request-id') as string;
    }
    const { data: stream, response } = await client.chat.completions
      .create({ model: 'sim-model', messages, stream: true, stream_options: { include_usage: true } })
      .withResponse();
    let usage: number | undefined;
    for await (const chunk of stream) if (chunk.usage) usage = chunk.usage.completion_tokens;
    expect(usage).toBe(TOKENS);
    return response.headers.get('x-request-id') as string;
  }

  it('counts and logs each request once, with its tokens, and releases every lease', async () => {
    const ids = await Promise.all(Array.from({ length: CLIENTS }, (_, i) => ask(i)));
    const url = stack.router.url;
    expect(await metricSum(url, 'vllm_router_requests_total{route="/v1/chat/completions"')).toBe(CLIENTS);
    expect(await metricSum(url, 'vllm_router_completion_tokens_total{')).toBe(CLIENTS * TOKENS);
    expect(await metricSum(url, 'vllm_router_prompt_tokens_total{')).toBeGreaterThan(CLIENTS * 100);

    const lines = stack.logs
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.msg === 'request' && l.route === '/v1/chat/completions');
    expect(lines.map((l) => l.request_id).sort()).toEqual([...ids].sort());
    for (const line of lines) {
      expect(line).toMatchObject({ status: 200, completion_tokens: TOKENS });
      expect(line.prompt_tokens).toBeGreaterThan(100);
    }
    for (const worker of stack.router.fleet.listWorkers()) expect(worker.load).toBe(0);
  });
});
