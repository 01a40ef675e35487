import { describe, expect, it } from 'vitest';
import { createSimEngine, type SimEngine } from '../../../src/sim/engine.ts';

function post(engine: SimEngine, path: string, body: unknown, headers: Record<string, string> = {}) {
  return engine.fetch(
    new Request(`http://sim${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    }),
  );
}

/** The `data:` payloads of an SSE body, in order. */
function sseData(text: string): string[] {
  return text
    .split('\n\n')
    .filter((block) => block.length > 0)
    .map((block) => {
      expect(block.startsWith('data: ')).toBe(true);
      return block.slice(6);
    });
}

const chat = (extra: Record<string, unknown> = {}) => ({
  model: 'sim-model',
  messages: [{ role: 'user', content: 'Say hello' }],
  ...extra,
});

describe('sim engine: OpenAI formats', () => {
  it('answers a chat completion with vLLM fields and usage', async () => {
    const engine = createSimEngine({ id: 'e1', tokens: 5 });
    const res = await post(engine, '/v1/chat/completions', chat());
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.headers.get('x-sim-engine')).toBe('e1');
    expect(res.headers.get('x-sim-cached-blocks')).toBe('0/0');
    const json = await res.json();
    expect(json).toMatchObject({
      object: 'chat.completion',
      model: 'sim-model',
      choices: [{ index: 0, message: { role: 'assistant' }, finish_reason: 'stop', stop_reason: null }],
      usage: { completion_tokens: 5, prompt_tokens_details: { cached_tokens: 0 } },
      kv_transfer_params: null,
    });
    expect(json.id).toMatch(/^chatcmpl-/);
    expect(json.choices[0].message.content.trim().split(' ')).toHaveLength(5);
    expect(json.usage.total_tokens).toBe(json.usage.prompt_tokens + 5);
  });

  it('caps tokens with max_tokens and max_completion_tokens (finish_reason length)', async () => {
    const engine = createSimEngine({ tokens: 16 });
    const a = await (await post(engine, '/v1/chat/completions', chat({ max_tokens: 3 }))).json();
    expect(a.choices[0].finish_reason).toBe('length');
    expect(a.usage.completion_tokens).toBe(3);
    const b = await (
      await post(engine, '/v1/chat/completions', chat({ max_completion_tokens: 2, max_tokens: 9 }))
    ).json();
    expect(b.usage.completion_tokens).toBe(2);
    const c = await (await post(engine, '/v1/completions', { prompt: 'x', max_tokens: 40 })).json();
    expect(c.choices[0].finish_reason).toBe('stop');
    expect(c.usage.completion_tokens).toBe(16);
    const d = await (
      await post(engine, '/v1/completions', { prompt: 'x', max_tokens: 20, ignore_eos: true })
    ).json();
    expect(d.usage.completion_tokens).toBe(20);
    expect(d.choices[0].finish_reason).toBe('length');
  });

  it('streams chat in vLLM chunk format: role first, finish_reason last, usage, [DONE]', async () => {
    const engine = createSimEngine({ tokens: 4 });
    const res = await post(
      engine,
      '/v1/chat/completions',
      chat({ stream: true, stream_options: { include_usage: true } }),
    );
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const data = sseData(await res.text());
    expect(data.at(-1)).toBe('[DONE]');
    const chunks = data.slice(0, -1).map((d) => JSON.parse(d));
    expect(chunks[0].choices[0].delta).toEqual({ role: 'assistant', content: '' });
    const tokenChunks = chunks.filter((c) => c.choices[0]?.delta?.content);
    expect(tokenChunks).toHaveLength(4);
    expect(tokenChunks.slice(0, -1).every((c) => c.choices[0].finish_reason === null)).toBe(true);
    expect(tokenChunks.at(-1).choices[0].finish_reason).toBe('stop');
    const usage = chunks.at(-1);
    expect(usage.choices).toEqual([]);
    expect(usage.usage).toMatchObject({ completion_tokens: 4 });
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    expect(chunks.every((c) => c.object === 'chat.completion.chunk')).toBe(true);
  });

  it('streams completions without a usage chunk unless asked', async () => {
    const engine = createSimEngine({ tokens: 3 });
    const data = sseData(
      await (await post(engine, '/v1/completions', { prompt: 'p', stream: true, max_tokens: 2 })).text(),
    );
    expect(data).toHaveLength(3);
    const [first, last] = [JSON.parse(data[0]!), JSON.parse(data[1]!)];
    expect(first.object).toBe('text_completion');
    expect(typeof first.choices[0].text).toBe('string');
    expect(last.choices[0].finish_reason).toBe('length');
    expect(data[2]).toBe('[DONE]');
  });

  it('answers embeddings as floats and as base64 float32', async () => {
    const engine = createSimEngine();
    const floats = await (await post(engine, '/v1/embeddings', { input: ['a', 'b'], dimensions: 8 })).json();
    expect(floats.object).toBe('list');
    expect(floats.data).toHaveLength(2);
    expect(floats.data[0].embedding).toHaveLength(8);
    const b64 = await (
      await post(engine, '/v1/embeddings', { input: 'a', dimensions: 8, encoding_format: 'base64' })
    ).json();
    const bytes = Uint8Array.from(atob(b64.data[0].embedding), (ch) => ch.charCodeAt(0));
    const decoded = Array.from(new Float32Array(bytes.buffer));
    expect(decoded).toEqual(floats.data[0].embedding);
    expect((await post(engine, '/v1/embeddings', { input: 42 })).status).toBe(400);
  });

  it('answers /generate (SGLang), /v1/responses and echoes other /v1 paths', async () => {
    const engine = createSimEngine({ tokens: 3 });
    const gen = await (
      await post(engine, '/generate', { text: 'hi', sampling_params: { max_new_tokens: 2 } })
    ).json();
    expect(gen.meta_info).toMatchObject({
      completion_tokens: 2,
      finish_reason: { type: 'length', length: 2 },
    });
    const genStream = sseData(
      await (
        await post(engine, '/generate', { text: 'hi', stream: true, sampling_params: { max_new_tokens: 2 } })
      ).text(),
    );
    expect(genStream).toHaveLength(3);
    expect(genStream.at(-1)).toBe('[DONE]');
    const [firstEvent, lastEvent] = [JSON.parse(genStream[0]!), JSON.parse(genStream[1]!)];
    expect(firstEvent.meta_info.finish_reason).toBeNull();
    expect(lastEvent.text).toBe(gen.text); // cumulative text, as SGLang streams it
    expect(lastEvent.meta_info.finish_reason).toEqual({ type: 'length', length: 2 });
    const resp = await (await post(engine, '/v1/responses', { model: 'sim-model', input: 'hi' })).json();
    expect(resp).toMatchObject({ object: 'response', status: 'completed', usage: { output_tokens: 3 } });
    expect(resp.output[0].content[0].type).toBe('output_text');
    expect((await post(engine, '/v1/responses', { input: 'hi', stream: true })).status).toBe(400);
    const echo = await post(engine, '/v1/rerank', { query: 'q', documents: ['d'] });
    expect(echo.status).toBe(200);
    expect(await echo.json()).toEqual({
      object: 'echo',
      method: 'POST',
      path: '/v1/rerank',
      body: { query: 'q', documents: ['d'] },
    });
  });

  it('answers an unknown model with 404 and malformed JSON with 400, in the error envelope', async () => {
    const engine = createSimEngine({ id: 'e2', models: ['a', 'b'] });
    const notFound = await post(engine, '/v1/chat/completions', { model: 'zzz', messages: [] });
    expect(notFound.status).toBe(404);
    expect(notFound.headers.get('x-sim-engine')).toBe('e2');
    expect(await notFound.json()).toEqual({
      error: { message: 'The model `zzz` does not exist.', type: 'NotFoundError', param: null, code: 404 },
    });
    expect((await post(engine, '/v1/chat/completions', { model: 'b', messages: [] })).status).toBe(200);
    const bad = await post(engine, '/v1/chat/completions', '{"model":');
    expect(bad.status).toBe(400);
    expect((await bad.json()).error.type).toBe('BadRequestError');
    expect((await post(engine, '/v1/chat/completions', { model: 'a' })).status).toBe(400);
    const unknownRoute = await engine.fetch(new Request('http://sim/nope'));
    expect(unknownRoute.status).toBe(404);
    expect(unknownRoute.headers.get('x-sim-engine')).toBe('e2');
  });

  it('defaults a request without model to the first served model', async () => {
    const engine = createSimEngine({ models: ['first', 'second'] });
    const json = await (await post(engine, '/v1/completions', { prompt: 'x' })).json();
    expect(json.model).toBe('first');
  });
});
