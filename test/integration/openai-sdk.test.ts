import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Running, startStack } from '../support/harness.ts';

describe('the official openai SDK as a client', () => {
  let stack: Running;
  let client: OpenAI;
  beforeAll(async () => {
    stack = await startStack({ engines: 2, engineOptions: { tokens: 6, ttftMs: 5, itlMs: 5 } });
    client = new OpenAI({ baseURL: `${stack.router.url}/v1`, apiKey: 'sk-test', maxRetries: 0 });
  });
  afterAll(() => stack.stop());

  it('creates a chat completion', async () => {
    const completion = await client.chat.completions.create({
      model: 'sim-model',
      messages: [{ role: 'user', content: 'Say hello' }],
    });
    expect(completion.choices[0]?.message.role).toBe('assistant');
    expect(completion.choices[0]?.message.content?.length).toBeGreaterThan(0);
    expect(completion.usage?.completion_tokens).toBe(6);
  });

  it('streams a chat completion to the end', async () => {
    const stream = await client.chat.completions.create({
      model: 'sim-model',
      messages: [{ role: 'user', content: 'Say hello' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let content = '';
    let finish: string | null | undefined;
    let usage: number | undefined;
    for await (const chunk of stream) {
      content += chunk.choices[0]?.delta.content ?? '';
      finish ??= chunk.choices[0]?.finish_reason;
      if (chunk.usage) usage = chunk.usage.completion_tokens;
    }
    expect(content.length).toBeGreaterThan(0);
    expect(finish).toBe('stop');
    expect(usage).toBe(6);
  });

  it('creates a completion and embeddings', async () => {
    const completion = await client.completions.create({
      model: 'sim-model',
      prompt: 'Once upon',
      max_tokens: 3,
    });
    expect(completion.choices[0]?.finish_reason).toBe('length');
    const embedding = await client.embeddings.create({ model: 'sim-model', input: ['a', 'b'] });
    expect(embedding.data).toHaveLength(2);
  });

  it('lists the models', async () => {
    const ids: string[] = [];
    for await (const model of client.models.list()) ids.push(model.id);
    expect(ids).toEqual(['sim-model']);
  });

  it('surfaces router errors as SDK errors with the status and code', async () => {
    await expect(
      client.chat.completions.create({ model: 'missing-model', messages: [{ role: 'user', content: 'x' }] }),
    ).rejects.toMatchObject({ status: 404, code: 'model_not_found' });
  });
});
