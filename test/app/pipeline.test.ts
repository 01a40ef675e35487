/** The request pipeline of the core app, in memory: what reaches the engines and what comes back. */
import { describe, expect, it } from 'vitest';
import { generatedText } from '../../src/sim/openai-format.ts';
import {
  chatBody,
  checkLeasesAfterEach,
  type ErrorBody,
  readChunks,
  sseContent,
  sseData,
  startApp,
} from './app-stack.ts';

checkLeasesAfterEach();

const TWO_ENGINES = '--worker-urls http://a.test http://b.test';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('pipeline (core app in memory)', () => {
  it('passes a non-streaming completion through: request body to the engine, answer to the client', async () => {
    const app = await startApp(TWO_ENGINES, { 'a.test': {}, 'b.test': {} });
    const sent = JSON.stringify(chatBody('When does the first train leave Grindelwald?', { max_tokens: 3 }));
    const res = await app.post(sent);

    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('application/json');
    expect(res.headers.get('x-router-attempts')).toBe('1');
    expect(res.headers.get('x-routed-worker-id')).toBe('http://a.test');
    expect(res.headers.get('x-sim-engine')).toBe('a.test'); // the engine's own headers pass through
    const body = (await res.json()) as {
      object: string;
      model: string;
      choices: { message: { role: string; content: string }; finish_reason: string }[];
      usage: { completion_tokens: number };
    };
    expect(body.object).toBe('chat.completion');
    expect(body.model).toBe('sim-model');
    expect(body.choices[0]?.message).toMatchObject({ role: 'assistant', content: generatedText(3) });
    expect(body.choices[0]?.finish_reason).toBe('length');
    expect(body.usage.completion_tokens).toBe(3);

    expect(app.inference()).toEqual(['a.test 200']);
    const call = app.net.calls.find((c) => c.method === 'POST')!;
    expect(call.path).toBe('/v1/chat/completions');
    expect(call.body).toBe(sent); // byte for byte
    expect(call.headers['content-type']).toBe('application/json');
    expect(app.engines['b.test']!.log).toHaveLength(0);
  });

  it('streams SSE chunk by chunk, as the engine produced them, ending in [DONE]', async () => {
    const app = await startApp(TWO_ENGINES, { 'a.test': { tokens: 5 }, 'b.test': { tokens: 5 } });
    const res = await app.post(chatBody('Is the line open in winter?', { stream: true }));

    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    expect(res.headers.get('x-router-attempts')).toBe('1');
    expect(res.headers.get('x-routed-worker-id')).toBe('http://a.test');
    const chunks = await readChunks(res);
    // One read per token: the first also carries the role event, the last the [DONE] terminator.
    expect(chunks).toHaveLength(5);
    chunks.forEach((chunk, i) => {
      expect(chunk.endsWith('\n\n')).toBe(true);
      expect(sseData(chunk)).toHaveLength(i === 0 || i === 4 ? 2 : 1);
    });
    const text = chunks.join('');
    expect(sseData(text).at(-1)).toBe('[DONE]');
    expect(text.match(/\[DONE\]/g)).toHaveLength(1);
    expect(sseContent(text)).toBe(generatedText(5));

    expect(app.inference()).toEqual(['a.test 200']);
    const entry = app.engines['a.test']!.log[0]!;
    expect(entry).toMatchObject({ completed: true, aborted: false, tokensSent: 5 });
    expect(app.engines['b.test']!.log).toHaveLength(0);
  });

  it('echoes the client x-request-id, to the client and to the engine', async () => {
    const app = await startApp(TWO_ENGINES, { 'a.test': {}, 'b.test': {} });
    const res = await app.post(chatBody('Hello'), { headers: { 'x-request-id': 'trip-42' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toBe('trip-42');
    expect(res.headers.get('x-router-attempts')).toBe('1');
    expect(res.headers.get('x-routed-worker-id')).toBe('http://a.test');
    await res.arrayBuffer();
    expect(app.engines['a.test']!.log[0]?.headers['x-request-id']).toBe('trip-42');
  });

  it('generates an x-request-id when the client sent none, the same one for the engine', async () => {
    const app = await startApp(TWO_ENGINES, { 'a.test': {}, 'b.test': {} });
    const res = await app.post(chatBody('Hello'));
    const id = res.headers.get('x-request-id');
    expect(id).toMatch(UUID);
    expect(res.headers.get('x-router-attempts')).toBe('1');
    expect(res.headers.get('x-routed-worker-id')).toBe('http://a.test');
    await res.arrayBuffer();
    expect(app.engines['a.test']!.log[0]?.headers['x-request-id']).toBe(id);
    const again = await app.post(chatBody('Hello again'));
    await again.arrayBuffer();
    expect(again.headers.get('x-request-id')).not.toBe(id);
  });

  it('answers an unknown model with 404 model_not_found in the OpenAI error shape, no engine called', async () => {
    const app = await startApp(TWO_ENGINES, { 'a.test': {}, 'b.test': {} });
    const res = await app.post(chatBody('Hello', { model: 'gpt-17' }));
    expect(res.status).toBe(404);
    expect(res.headers.get('x-router-error-code')).toBe('model_not_found');
    expect(res.headers.get('x-router-attempts')).toBeNull();
    expect(res.headers.get('x-routed-worker-id')).toBeNull();
    const body = (await res.json()) as ErrorBody;
    expect(body).toEqual({
      error: {
        message: expect.stringContaining('"gpt-17"'),
        type: 'invalid_request_error',
        code: 'model_not_found',
        param: 'model',
      },
    });
    expect(body.error.message).toContain('sim-model'); // it names what is served
    expect(app.inference()).toEqual([]);
  });

  it('answers malformed JSON with 400 invalid_json, no engine called', async () => {
    const app = await startApp(TWO_ENGINES, { 'a.test': {}, 'b.test': {} });
    const res = await app.post('{"model": "sim-model", "messages": [');
    expect(res.status).toBe(400);
    expect(res.headers.get('x-router-error-code')).toBe('invalid_json');
    expect(res.headers.get('x-router-attempts')).toBeNull();
    expect(res.headers.get('x-routed-worker-id')).toBeNull();
    expect(res.headers.get('x-request-id')).toMatch(UUID);
    const body = (await res.json()) as ErrorBody;
    expect(body.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_json' });
    expect(app.inference()).toEqual([]);
    expect(app.engines['a.test']!.log).toHaveLength(0);
    expect(app.engines['b.test']!.log).toHaveLength(0);
  });

  it('answers a body over --max-payload-size with 413, declared or streamed, no engine called', async () => {
    const app = await startApp(`${TWO_ENGINES} --max-payload-size 1024`, { 'a.test': {}, 'b.test': {} });
    const big = JSON.stringify(chatBody('x'.repeat(2000)));
    const declared = await app.post(big, { headers: { 'content-length': String(big.length) } });
    const bytes = new TextEncoder().encode(big);
    const streamed = await app.post(
      new ReadableStream<Uint8Array>({
        start(controller) {
          for (let i = 0; i < bytes.length; i += 500) controller.enqueue(bytes.slice(i, i + 500));
          controller.close();
        },
      }),
    );
    for (const res of [declared, streamed]) {
      expect(res.status).toBe(413);
      expect(res.headers.get('x-router-error-code')).toBe('payload_too_large');
      expect(res.headers.get('x-router-attempts')).toBeNull();
      expect(res.headers.get('x-routed-worker-id')).toBeNull();
      const body = (await res.json()) as ErrorBody;
      expect(body.error).toMatchObject({ type: 'invalid_request_error', code: 'payload_too_large' });
      expect(body.error.message).toContain('1024');
    }
    expect(app.inference()).toEqual([]);

    const small = await app.post(chatBody('short enough'));
    expect(small.status).toBe(200);
    await small.arrayBuffer();
    expect(app.inference()).toEqual(['a.test 200']);
  });

  it('lists the union of the models the engines serve on GET /v1/models, and routes by model', async () => {
    const app = await startApp(TWO_ENGINES, {
      'a.test': { models: ['alpine-7b', 'shared-1b'] },
      'b.test': { models: ['glacier-70b', 'shared-1b'] },
    });
    const before = app.net.calls.length;
    const res = await app.request('/v1/models');
    expect(res.status).toBe(200);
    const body = (await res.json()) as { object: string; data: { id: string; object: string }[] };
    expect(body.object).toBe('list');
    expect(body.data.map((m) => m.id).sort()).toEqual(['alpine-7b', 'glacier-70b', 'shared-1b']);
    expect(body.data.every((m) => m.object === 'model')).toBe(true);
    expect(app.net.calls.length).toBe(before); // answered from the fleet, no engine asked

    const glacier = await app.post(chatBody('Hello', { model: 'glacier-70b' }));
    expect(glacier.status).toBe(200);
    expect(glacier.headers.get('x-routed-worker-id')).toBe('http://b.test');
    expect(glacier.headers.get('x-router-attempts')).toBe('1');
    await glacier.arrayBuffer();
    expect(app.inference()).toEqual(['b.test 200']);
  });
});
