/**
 * The request metrics and log fields, through the core app with simulated engines and a fake clock:
 * the bounded model label, time to first token, inter-token latency and time to response headers
 * per model and worker, token counts from the engines' `usage`, and the request log line's method,
 * token counts, client (behind --trusted-proxies) and level.
 */
import { describe, expect, it } from 'vitest';
import { chatBody, checkLeasesAfterEach, startApp } from './app-stack.ts';

checkLeasesAfterEach();

const ENGINES = '--worker-urls http://a.test --policy round_robin --log-json --log-level info';
const MODEL_A = 'model="sim-model",worker="http://a.test"';

type LogLine = Record<string, unknown>;
const requestLines = (logs: string[]): LogLine[] =>
  logs
    .map((l) => JSON.parse(l) as LogLine)
    .filter((l) => l.msg === 'request' || l.msg === 'request rejected');

describe('request metrics (core app in memory)', () => {
  it('a streamed answer: TTFT, a gap per later chunk, headers time and usage, labelled by model and worker', async () => {
    const app = await startApp(ENGINES, { 'a.test': { tokens: 4 } });
    const res = await app.post(
      chatBody('Is the line open?', { stream: true, stream_options: { include_usage: true } }),
    );
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    app.clock.advance(120); // the first chunk reaches the client 120 ms after the request
    let chunks = 0;
    while (!(await reader.read()).done) {
      chunks++;
      app.clock.advance(30);
    }
    const gaps = chunks - 1;
    expect(gaps).toBeGreaterThan(2);

    const ttft = 'vllm_router_time_to_first_token_seconds';
    expect(await app.metric(`${ttft}_count`, MODEL_A)).toBe(1);
    expect(await app.metric(`${ttft}_sum`, MODEL_A)).toBeCloseTo(0.12, 6);
    expect(await app.metric(`${ttft}_bucket`, `${MODEL_A},le="0.1"`)).toBe(0);
    expect(await app.metric(`${ttft}_bucket`, `${MODEL_A},le="0.25"`)).toBe(1);
    const itl = 'vllm_router_inter_token_latency_seconds';
    expect(await app.metric(`${itl}_count`, MODEL_A)).toBe(gaps);
    expect(await app.metric(`${itl}_sum`, MODEL_A)).toBeCloseTo(gaps * 0.03, 6);
    expect(await app.metric(`${itl}_bucket`, `${MODEL_A},le="0.025"`)).toBe(0);
    expect(await app.metric(`${itl}_bucket`, `${MODEL_A},le="0.05"`)).toBe(gaps);
    expect(await app.metric('vllm_router_time_to_response_headers_seconds_count', MODEL_A)).toBe(1);

    const entry = app.engines['a.test']!.log[0]!;
    expect(entry.completed).toBe(true);
    expect(await app.metric('vllm_router_completion_tokens_total', 'model="sim-model"')).toBe(4);
    const prompt = await app.metric('vllm_router_prompt_tokens_total', 'model="sim-model"');
    expect(prompt).toBeGreaterThan(10);

    const [line] = requestLines(app.logs);
    expect(line).toMatchObject({
      level: 'info',
      method: 'POST',
      route: '/v1/chat/completions',
      model: 'sim-model',
      status: 200,
      prompt_tokens: prompt,
      completion_tokens: 4,
      client: '127.0.0.1',
    });
    expect(line!.ttft_ms).toBe(120);
    expect(await app.metric('vllm_router_requests_total', 'status="200",model="sim-model"')).toBe(1);
    expect(await app.metric('vllm_router_request_duration_seconds_count', 'model="sim-model"')).toBe(1);
  });

  it('a non-streaming answer: tokens from the end of its JSON, headers time, no stream histograms', async () => {
    const app = await startApp(ENGINES, { 'a.test': { tokens: 3 } });
    const res = await app.post(chatBody('When does the first train leave?', { max_tokens: 3 }));
    const body = (await res.json()) as { usage: { prompt_tokens: number; completion_tokens: number } };
    expect(await app.metric('vllm_router_prompt_tokens_total', 'model="sim-model"')).toBe(
      body.usage.prompt_tokens,
    );
    expect(await app.metric('vllm_router_completion_tokens_total', 'model="sim-model"')).toBe(3);
    expect(await app.metric('vllm_router_time_to_response_headers_seconds_count', MODEL_A)).toBe(1);
    expect(await app.metric('vllm_router_time_to_first_token_seconds_count')).toBe(0);
    expect(await app.metric('vllm_router_inter_token_latency_seconds_count')).toBe(0);
    expect(requestLines(app.logs)[0]).toMatchObject({
      prompt_tokens: body.usage.prompt_tokens,
      completion_tokens: 3,
    });
  });

  it('a stream without include_usage counts no tokens and logs none', async () => {
    const app = await startApp(ENGINES, { 'a.test': { tokens: 3 } });
    const res = await app.post(chatBody('Hello', { stream: true }));
    await res.text();
    expect(await app.metric('vllm_router_completion_tokens_total')).toBe(0);
    const [line] = requestLines(app.logs);
    expect(line).not.toHaveProperty('prompt_tokens');
    expect(line).not.toHaveProperty('completion_tokens');
  });

  it('bounds the model label: a name the fleet does not serve is `other`, a request refused unread is empty', async () => {
    const app = await startApp(ENGINES, { 'a.test': {} });
    for (const model of ['gpt-4o', 'made-up-1', 'made-up-2']) {
      expect((await app.post(chatBody('hi', { model }))).status).toBe(404);
    }
    expect((await app.post('{not json')).status).toBe(400);
    const text = await (await app.request('/metrics')).text();
    expect(text).toContain(
      'vllm_router_requests_total{route="/v1/chat/completions",method="POST",status="404",model="other"} 3',
    );
    expect(text).toContain(
      'vllm_router_request_errors_total{route="/v1/chat/completions",error_type="model_not_found",model="other"} 3',
    );
    expect(text).toContain(
      'vllm_router_requests_total{route="/v1/chat/completions",method="POST",status="400",model=""} 1',
    );
    expect(text).not.toMatch(/model="(gpt-4o|made-up)/);
    // The log keeps what the client asked for (it is not a label).
    expect(requestLines(app.logs).map((l) => l.model)).toEqual([
      'gpt-4o',
      'made-up-1',
      'made-up-2',
      undefined,
    ]);
    expect(requestLines(app.logs).at(-1)).toMatchObject({
      msg: 'request rejected',
      method: 'POST',
      status: 400,
    });
  });

  it('names the client behind --trusted-proxies from X-Forwarded-For, and the peer otherwise', async () => {
    const headers = { 'x-forwarded-for': '203.0.113.50, 198.51.100.7' };
    const behind = await startApp(
      `${ENGINES} --trusted-proxies 10.0.0.0/8`,
      { 'a.test': {} },
      { peer: '10.0.0.5' },
    );
    await (await behind.post(chatBody('hi'), { headers })).text();
    expect((await behind.post('{not json', { headers })).status).toBe(400);
    expect(requestLines(behind.logs).map((l) => l.client)).toEqual(['198.51.100.7', '198.51.100.7']);

    const direct = await startApp(ENGINES, { 'a.test': {} }, { peer: '10.0.0.5' });
    await (await direct.post(chatBody('hi'), { headers })).text();
    expect(requestLines(direct.logs)[0]?.client).toBe('10.0.0.5');
  });

  it('writes a request that ends in a 5xx at warn, others at info', async () => {
    const app = await startApp(`${ENGINES} --disable-retries`, {
      'a.test': { failure: { mode: 'status', status: 500, first: 1 } },
    });
    for (const [question, status] of [
      ['one', 500],
      ['two', 200],
    ] as const) {
      const res = await app.post(chatBody(question));
      expect(res.status).toBe(status);
      await res.text();
    }
    const lines = requestLines(app.logs);
    expect(lines.map((l) => [l.level, l.status])).toEqual([
      ['warn', 500],
      ['info', 200],
    ]);
  });
});
