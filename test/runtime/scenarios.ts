/**
 * The integration scenarios that matter for a runtime, written once and run against each adapter
 * started as a real process (test/runtime/node, test/runtime/deno): passthrough with and without
 * streaming (tokens as they come), a client abort reaching the engine, a retry after a 503,
 * /v1/models, bad input, and the SIGTERM drain. The engines are real simulated vLLM engines on
 * loopback, served by this test process, so each scenario configures them and reads their logs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimEngine } from '../../src/sim/node.ts';
import type { SimOptions } from '../../src/sim/types.ts';
import { hasContentToken } from '../support/sse.ts';
import type { RouterProcess } from './router-process.ts';

export type RunningEngine = Awaited<ReturnType<typeof startSimEngine>>;

export interface ScenarioContext {
  /** Base URL of the router under test. */
  url: string;
  engines: RunningEngine[];
  router: RouterProcess;
}

type ErrorBody = { error: { message: string; type: string; code: string; param: string | null } };

const chat = (extra: Record<string, unknown> = {}) =>
  JSON.stringify({ model: 'sim-model', messages: [{ role: 'user', content: 'Tell me a story' }], ...extra });

const post = (url: string, body: string, init: RequestInit = {}) =>
  fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
    ...init,
  });

/** Fresh logs and counters, no failure plan, and the timing this scenario needs. */
function prepare(engines: RunningEngine[], options: Partial<SimOptions> = {}): void {
  for (const { engine } of engines) {
    engine.configure({ failure: { mode: 'none' }, tokens: 16, ttftMs: 5, itlMs: 5, ...options });
    engine.reset();
  }
}

const inference = (engines: RunningEngine[]) => engines.flatMap((e) => e.engine.log);

async function readAll(reader: ReadableStreamDefaultReader<Uint8Array>, text = ''): Promise<string> {
  const decoder = new TextDecoder();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return text;
    text += decoder.decode(value, { stream: true });
  }
}

async function metricValue(url: string, series: string): Promise<number | undefined> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

export const scenarios = {
  async 'forwards a non-streaming chat completion'({ url, engines }: ScenarioContext) {
    prepare(engines);
    const res = await post(url, chat({ max_tokens: 8 }));
    expect(res.status).toBe(200);
    const body = (await res.json()) as { object: string; choices: { message: { content: string } }[] };
    expect(body.object).toBe('chat.completion');
    expect(body.choices[0]?.message.content.length).toBeGreaterThan(0);
    expect(res.headers.get('x-router-attempts')).toBe('1');
    expect(engines.map((e) => e.url)).toContain(res.headers.get('x-routed-worker-id'));
    expect(inference(engines)).toHaveLength(1);
  },

  async 'streams tokens as the engine produces them (first token before the engine finished)'({
    url,
    engines,
  }: ScenarioContext) {
    prepare(engines, { tokens: 8, ttftMs: 10, itlMs: 40 });
    const res = await post(url, chat({ stream: true }));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = '';
    let firstTokenAt: number | undefined;
    let engineDoneAtFirstToken: boolean | undefined;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
      if (firstTokenAt === undefined && hasContentToken(text)) {
        firstTokenAt = performance.now();
        engineDoneAtFirstToken = inference(engines).some((e) => e.tEndMs !== null);
      }
    }
    // The engine was still generating when the first token reached the client: that is what
    // streaming means here (a timing ratio would race a loaded machine).
    expect(firstTokenAt).toBeDefined();
    expect(engineDoneAtFirstToken).toBe(false);
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
    expect(text.match(/chat\.completion\.chunk/g)?.length).toBeGreaterThanOrEqual(8);
  },

  async 'cancels the engine request when the client leaves mid-stream'({ url, engines }: ScenarioContext) {
    prepare(engines, { tokens: 200, ttftMs: 5, itlMs: 20 });
    const controller = new AbortController();
    const res = await post(url, chat({ stream: true }), { signal: controller.signal });
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    controller.abort();
    const engine = engines.find((e) => e.url === res.headers.get('x-routed-worker-id'))?.engine;
    const entry = await engine?.waitForLog((e) => e.aborted);
    expect(entry?.completed).toBe(false);
    expect(entry?.tokensSent).toBeLessThan(200);
    // The load lease is released too.
    for (const e of engines) {
      await expect.poll(() => metricValue(url, `vllm_router_running_requests{worker="${e.url}"}`)).toBe(0);
    }
  },

  async 'cancels the engine request when the client leaves before the response headers'({
    url,
    engines,
  }: ScenarioContext) {
    // Only the runtime's request signal can tell the router: there is no response body to cancel yet.
    prepare(engines, { failure: { mode: 'hang' } });
    const controller = new AbortController();
    const pending = post(url, chat(), { signal: controller.signal }).catch((e: unknown) => e);
    const [first] = engines;
    await first?.engine.waitForLog(() => true);
    controller.abort();
    await pending;
    const entry = await first?.engine.waitForLog((e) => e.aborted);
    expect(entry?.status).toBeNull();
    await expect.poll(() => metricValue(url, `vllm_router_running_requests{worker="${first?.url}"}`)).toBe(0);
  },

  async 'retries after a 503 and answers 200'({ url, engines }: ScenarioContext) {
    prepare(engines, { failure: { mode: 'status', status: 503, first: 1 } });
    const res = await post(url, chat({ max_tokens: 4 }));
    expect(res.status).toBe(200);
    expect(res.headers.get('x-router-attempts')).toBe('2');
    await res.arrayBuffer();
    expect(inference(engines).map((e) => e.status)).toEqual([503, 200]);
  },

  async 'serves the models of its workers on /v1/models'({ url }: ScenarioContext) {
    const res = await fetch(`${url}/v1/models`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { object: string; data: { id: string }[] };
    expect(body.object).toBe('list');
    expect(body.data.map((m) => m.id)).toEqual(['sim-model']);
  },

  async 'answers bad input with 400 in the OpenAI error shape, without calling an engine'({
    url,
    engines,
  }: ScenarioContext) {
    prepare(engines);
    const malformed = await post(url, '{"model": "sim-model", "messages": [');
    expect(malformed.status).toBe(400);
    expect(malformed.headers.get('x-router-error-code')).toBe('invalid_json');
    const body = (await malformed.json()) as ErrorBody;
    expect(body.error.type).toBe('invalid_request_error');
    expect(body.error.code).toBe('invalid_json');
    const badModel = await post(url, JSON.stringify({ model: 42, messages: [] }));
    expect(badModel.status).toBe(400);
    expect(((await badModel.json()) as ErrorBody).error.param).toBe('model');
    expect(inference(engines)).toEqual([]);
  },

  async 'serves its process and runtime metrics and its build info on /metrics'({
    url,
    engines,
  }: ScenarioContext) {
    prepare(engines, { tokens: 4, ttftMs: 5, itlMs: 30 });
    await (await post(url, chat({ stream: true, stream_options: { include_usage: true } }))).text();
    const text = await (await fetch(`${url}/metrics`)).text();
    const runtime =
      /^vllm_router_build_info\{version="[^"]+",runtime="(node|deno)",runtime_version="[^"]+"\} 1$/m;
    expect(text).toMatch(runtime);
    for (const name of [
      'process_resident_memory_bytes',
      'process_cpu_seconds_total',
      'vllm_router_heap_used_bytes',
      'vllm_router_event_loop_lag_p99_seconds',
    ]) {
      expect(await metricValue(url, name), name).toBeGreaterThanOrEqual(0);
    }
    expect(await metricValue(url, 'process_resident_memory_bytes')).toBeGreaterThan(10_000_000);
    expect(text).toMatch(
      /^vllm_router_time_to_first_token_seconds_count\{model="sim-model",worker="[^"]+"\} [1-9]/m,
    );
    expect(text).toMatch(/^vllm_router_completion_tokens_total\{model="sim-model"\} [1-9]/m);
  },

  /** Last: it stops the router (started with --shutdown-drain-delay-secs 2). */
  async 'on SIGTERM answers /readiness 503 while still serving, lets the in-flight stream finish, then exits 0'({
    url,
    engines,
    router,
  }: ScenarioContext) {
    prepare(engines, { tokens: 20, ttftMs: 5, itlMs: 25 });
    const res = await post(url, chat({ stream: true }));
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    router.child.kill('SIGTERM');
    await expect
      .poll(async () => (await fetch(`${url}/readiness`)).json(), { timeout: 5000, interval: 20 })
      .toMatchObject({ status: 'not_ready', reason: 'shutting_down' });
    // The drain delay: readiness is 503, and new requests are still answered.
    const during = await post(url, chat({ max_tokens: 2 }));
    expect(during.status).toBe(200);
    await during.arrayBuffer();
    const text = await readAll(reader);
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
    expect(await router.exited).toBe(0);
    await expect(fetch(`${url}/liveness`)).rejects.toThrow();
    expect(inference(engines)[0]?.completed).toBe(true);
    expect(router.output()).toContain('drained: every request finished; exiting 0');
  },
} satisfies Record<string, (ctx: ScenarioContext) => Promise<void>>;

/** Router flags the scenarios need: a drain delay long enough to see readiness 503 while serving. */
export const SCENARIO_FLAGS = ['--shutdown-drain-delay-secs', '2'];

/** Router flags of the cut: no drain delay, a grace period much shorter than the stream. */
export const CUT_FLAGS = ['--shutdown-drain-delay-secs', '0', '--shutdown-grace-period-secs', '0.3'];

/**
 * A stream still running when the grace period ends: the client gets the final SSE error event of
 * type `shutdown` (no [DONE]), the engine request is cancelled, the log says `shutdown` (not
 * client_disconnected), and the process exits 1. `start` runs the router with CUT_FLAGS.
 */
export function describeShutdownCut(
  name: string,
  start: (engineUrls: string[]) => Promise<RouterProcess>,
): void {
  describe(name, () => {
    it('cuts a stream still running when the grace period ends: shutdown event, no [DONE], exit 1', async () => {
      const engine = await startSimEngine({ id: 'cut-engine', host: '127.0.0.1', port: 0 });
      const router = await start([engine.url]);
      try {
        prepare([engine], { tokens: 400, ttftMs: 5, itlMs: 25 });
        const res = await post(router.url, chat({ stream: true }));
        const reader = (res.body as ReadableStream<Uint8Array>).getReader();
        await reader.read();
        router.child.kill('SIGTERM');
        const text = await readAll(reader);
        expect(text).not.toContain('[DONE]');
        const last = text.trimEnd().split('\n\n').at(-1) ?? '';
        expect(JSON.parse(last.replace(/^data: /, ''))).toEqual({
          error: { message: 'router shutting down', type: 'shutdown', code: 'shutdown', param: null },
        });
        expect(await router.exited).toBe(1);
        const entry = await engine.engine.waitForLog((e) => e.aborted);
        expect(entry.completed).toBe(false);
        const output = router.output();
        expect(output).toContain('grace period over: cutting the requests still in flight; exiting 1');
        expect(output).toContain('stream cut by the shutdown');
        expect(output).toMatch(/INFO +request .*error=shutdown/);
        expect(output).not.toContain('client_disconnected');
      } finally {
        await router.stop();
        await engine.close();
      }
    });
  });
}

/**
 * Registers the scenarios as one vitest suite: starts one simulated engine in this process, the
 * router through `start(engineUrls)`, and runs every scenario against them in order.
 */
export function describeRuntime(name: string, start: (engineUrls: string[]) => Promise<RouterProcess>): void {
  describe(name, () => {
    const ctx = {} as ScenarioContext;
    beforeAll(async () => {
      ctx.engines = [await startSimEngine({ id: 'engine-0', host: '127.0.0.1', port: 0 })];
      ctx.router = await start(ctx.engines.map((e) => e.url));
      ctx.url = ctx.router.url;
    });
    afterAll(async () => {
      await ctx.router?.stop();
      await Promise.all((ctx.engines ?? []).map((e) => e.close()));
    });
    for (const [title, run] of Object.entries(scenarios)) it(title, () => run(ctx));
  });
}
