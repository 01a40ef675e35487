// The simulated engine over real loopback HTTP: timing, wire-level failures, the openai SDK.
import OpenAI from 'openai';
import { Agent, request } from 'undici';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { type RunningSimEngine, type StartSimOptions, startSimEngine } from '../../src/sim/node.ts';

const agent = new Agent({ keepAliveTimeout: 10_000 });
const running: RunningSimEngine[] = [];

async function start(options: StartSimOptions = {}): Promise<RunningSimEngine> {
  const sim = await startSimEngine({ port: 0, ...options });
  running.push(sim);
  return sim;
}

afterEach(async () => {
  await Promise.all(running.splice(0).map((s) => s.close()));
});
afterAll(async () => {
  await agent.close();
});

const chatBody = (extra: Record<string, unknown> = {}) =>
  JSON.stringify({ model: 'sim-model', messages: [{ role: 'user', content: 'hello' }], ...extra });

function post(sim: RunningSimEngine, path: string, body: string, signal?: AbortSignal) {
  return request(`${sim.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
    dispatcher: agent,
    signal,
  });
}

describe('sim engine over loopback HTTP', () => {
  it('listens on 127.0.0.1 and answers with its id', async () => {
    const sim = await start({ id: 'loop' });
    expect(sim.url).toBe(`http://127.0.0.1:${sim.port}`);
    const res = await request(`${sim.url}/health`, { dispatcher: agent });
    expect(res.statusCode).toBe(200);
    expect(res.headers['x-sim-engine']).toBe('loop');
    expect(res.headers['content-length']).toBe('0');
    await res.body.dump();
  });

  it('streams each token when its time comes: the first arrives well before the end', async () => {
    const sim = await start({ ttftMs: 20, itlMs: 20, tokens: 8 });
    const t0 = performance.now();
    const res = await post(sim, '/v1/chat/completions', chatBody({ stream: true }));
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    let text = '';
    let tFirst = -1;
    let engineDoneAtFirstToken: boolean | undefined;
    for await (const chunk of res.body) {
      text += chunk.toString();
      if (tFirst < 0 && /"content":" /.test(text)) {
        tFirst = performance.now() - t0;
        engineDoneAtFirstToken = sim.engine.log[0]!.tEndMs !== null;
      }
    }
    const tEnd = performance.now() - t0;
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(engineDoneAtFirstToken).toBe(false);
    expect(tFirst).toBeGreaterThanOrEqual(15);
    expect(tEnd).toBeGreaterThanOrEqual(20 + 7 * 20 - 5);
    expect(tEnd - tFirst).toBeGreaterThan(60); // tokens were not held back and sent in one burst (140 ms nominal)
  });

  it('midstream SSE: the client sees the connection cut, not a clean end', async () => {
    const sim = await start({
      tokens: 8,
      ttftMs: 5,
      itlMs: 5,
      failure: { mode: 'midstream', cutAfterChunks: 3 },
    });
    const res = await post(sim, '/v1/chat/completions', chatBody({ stream: true }));
    expect(res.statusCode).toBe(200);
    let text = '';
    const read = async () => {
      for await (const chunk of res.body) text += chunk.toString();
    };
    await expect(read()).rejects.toMatchObject({ code: 'UND_ERR_SOCKET' });
    expect(text.match(/"content":" /g)).toHaveLength(3);
    expect(text).not.toContain('[DONE]');
    expect(sim.engine.log[0]).toMatchObject({
      status: 200,
      completed: false,
      injected: 'midstream',
      tokensSent: 3,
    });
  });

  it('midstream JSON: fewer bytes than content-length, then the connection closes', async () => {
    const sim = await start({ failure: { mode: 'midstream' } });
    const res = await post(sim, '/v1/completions', JSON.stringify({ prompt: 'p' }));
    expect(res.statusCode).toBe(200);
    expect(Number(res.headers['content-length'])).toBeGreaterThan(100);
    await expect(res.body.text()).rejects.toMatchObject({ code: 'UND_ERR_SOCKET' });
  });

  it('reset: the client sees a socket error and no response', async () => {
    const sim = await start({ failure: { mode: 'reset' } });
    const err = await post(sim, '/v1/chat/completions', chatBody()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(['ECONNRESET', 'UND_ERR_SOCKET']).toContain((err as { code?: string }).code);
    expect(sim.engine.log[0]).toMatchObject({ status: null, completed: false, injected: 'reset' });
    sim.engine.configure({ failure: { mode: 'none' } });
    const ok = await post(sim, '/v1/chat/completions', chatBody());
    expect(ok.statusCode).toBe(200); // the engine itself keeps serving
    await ok.body.dump();
  });

  it('hang: never answers; a client abort is recorded as aborted', async () => {
    const sim = await start({ failure: { mode: 'hang' } });
    const ac = new AbortController();
    const pending = post(sim, '/v1/chat/completions', chatBody(), ac.signal);
    const entry = await sim.engine.waitForLog((e) => e.injected === 'hang');
    expect(entry.tEndMs).toBeNull();
    ac.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    const settled = await sim.engine.waitForLog((e) => e.seq === entry.seq && e.tEndMs !== null);
    expect(settled).toMatchObject({ aborted: true, completed: false, status: null });
  });

  it('close() is prompt with a hanging request and an idle keep-alive connection', async () => {
    const sim = await startSimEngine({ port: 0, failure: { mode: 'hang', first: 1 } });
    const pending = post(sim, '/v1/chat/completions', chatBody()).then(
      () => 'answered',
      () => 'failed',
    );
    await sim.engine.waitForLog((e) => e.injected === 'hang');
    const idle = await post(sim, '/v1/chat/completions', chatBody()); // a second, now idle connection
    await idle.body.dump();
    const t0 = performance.now();
    await sim.close();
    expect(performance.now() - t0).toBeLessThan(500);
    expect(await pending).toBe('failed');
    expect(sim.engine.log[0]).toMatchObject({ aborted: true });
    await expect(request(`${sim.url}/health`, { dispatcher: agent })).rejects.toThrow();
  });

  it('serves the official openai SDK: chat (JSON and stream), embeddings, and errors', async () => {
    const sim = await start({ tokens: 5, ttftMs: 5, itlMs: 2 });
    const client = new OpenAI({ baseURL: `${sim.url}/v1`, apiKey: 'sk-sim', maxRetries: 0 });
    const messages = [{ role: 'user' as const, content: 'hello' }];

    const completion = await client.chat.completions.create({ model: 'sim-model', messages, max_tokens: 3 });
    expect(completion.choices[0]!.finish_reason).toBe('length');
    expect(completion.usage?.completion_tokens).toBe(3);

    const stream = await client.chat.completions.create({
      model: 'sim-model',
      messages,
      stream: true,
      stream_options: { include_usage: true },
    });
    let content = '';
    let finish: string | null = null;
    let usageTokens = 0;
    for await (const chunk of stream) {
      content += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      usageTokens = chunk.usage?.completion_tokens ?? usageTokens;
    }
    expect(content.trim().split(' ')).toHaveLength(5);
    expect(finish).toBe('stop');
    expect(usageTokens).toBe(5);

    const embedding = await client.embeddings.create({ model: 'sim-model', input: 'hello', dimensions: 8 });
    expect(embedding.data[0]!.embedding).toHaveLength(8);

    await expect(client.chat.completions.create({ model: 'nope', messages })).rejects.toBeInstanceOf(
      OpenAI.NotFoundError,
    );
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual(['sim-model']);
  });
});
