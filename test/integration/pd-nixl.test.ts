/**
 * NIXL prefill/decode over real loopback HTTP (the default connector): simulated prefill and decode
 * engines, a router from a real `--vllm-pd-disaggregation` command line and the openai SDK. Each leg's
 * path, body and headers are read from the engines' request logs.
 */
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimEngine } from '../../src/sim/node.ts';
import { promptText, promptTokens } from '../../src/sim/openai-format.ts';
import type { SimLogEntry } from '../../src/sim/types.ts';
import type { RunningEngine } from '../support/harness.ts';
import {
  chat,
  chatMessages,
  engineLog,
  legPair,
  type PdStack,
  sample,
  sleepGate,
  startPdStack,
} from '../support/pd-stack.ts';

type Body = Record<string, unknown>;
type Route = 'chat' | 'completions' | 'responses';

const NIXL_PREFILL = {
  do_remote_decode: true,
  do_remote_prefill: false,
  remote_engine_id: null,
  remote_block_ids: null,
  remote_host: null,
  remote_port: null,
};

/** What the prefill leg of `original` must be: one token, no stream, NIXL's request for a remote decode. */
function expectedPrefill(original: Body, route: Route): Body {
  const { stream_options: _o, min_tokens: _m, min_completion_tokens: _c, ...rest } = original;
  const out: Body = { ...rest, stream: false, kv_transfer_params: NIXL_PREFILL };
  if (route === 'responses') out.max_output_tokens = 1;
  else out.max_tokens = 1;
  if ('max_completion_tokens' in original) out.max_completion_tokens = 1;
  if ('n' in original) out.n = 1;
  return out;
}

/** The `kv_transfer_params` the simulated prefill engine answered this leg with (its NIXL handle). */
function prefillAnswerKv(engine: RunningEngine, leg: SimLogEntry, route: Route): Body {
  const rank = Number(leg.headers['x-data-parallel-rank'] ?? 0);
  const blocks = Math.max(1, Math.ceil(promptTokens(promptText(leg.body as Body, route)) / 16));
  return {
    do_remote_prefill: true,
    do_remote_decode: false,
    remote_block_ids: Array.from({ length: blocks }, (_, i) => i),
    remote_engine_id: `${engine.engine.id}-dp${rank}`,
    remote_request_id: leg.headers['x-request-id'],
    remote_host: '127.0.0.1',
    remote_port: engine.engine.config.kvPort + rank,
    tp_size: 1,
  };
}

/** Asserts the exact legs of one request and returns them. */
function assertLegs(s: PdStack, requestId: string, original: Body, route: Route, path: string) {
  const { prefill, decode } = legPair(s, requestId);
  expect(prefill.leg.path).toBe(path);
  expect(decode.leg.path).toBe(path);
  expect(prefill.leg.body).toEqual(expectedPrefill(original, route));
  const kv = prefillAnswerKv(prefill.engine, prefill.leg, route);
  expect(decode.leg.body).toEqual({ ...original, kv_transfer_params: kv });
  return { prefill, decode };
}

describe('NIXL prefill/decode through the router', () => {
  let s: PdStack;
  // Decode engines: the first token at once, every later one held while the gate is closed.
  const gate = sleepGate();
  beforeAll(async () => {
    s = await startPdStack({
      engine: { ttftMs: 5, tokens: 8 },
      // Distinct KV side channels, so a decode's params name the prefill engine that answered.
      prefill: (i) => ({ kvPort: 7100 + 100 * i, models: ['sim-model', 'prefill-only-model'] }),
      decode: (i) => ({
        ttftMs: 0,
        itlMs: 1,
        now: () => 0,
        sleep: gate.sleep,
        ...(i === 1 ? { models: ['sim-model', 'decode-model'] } : {}),
      }),
      // Both forms of the flag: `--prefill URL` and `--prefill URL BOOTSTRAP_PORT`.
      prefillArg: (e, i) => (i === 1 ? [e.url, '8998'] : [e.url]),
    });
  });
  afterAll(() => s?.stop());

  it('several chat requests at once, streaming and not: exact legs, one request id per request', async () => {
    const bodies: Body[] = [
      { model: 'sim-model', messages: chatMessages('What is a router?'), max_tokens: 5, min_tokens: 2 },
      { model: 'sim-model', messages: chatMessages('And a decode?'), max_completion_tokens: 6, n: 2 },
      { model: 'sim-model', messages: chatMessages('Why KV?'), min_completion_tokens: 1, temperature: 0 },
      { model: 'sim-model', messages: chatMessages('Stream one'), stream: true },
      {
        model: 'sim-model',
        messages: chatMessages('Stream two'),
        stream: true,
        stream_options: { include_usage: true },
      },
      { model: 'sim-model', messages: chatMessages('Stream three'), stream: true, max_tokens: 4 },
    ];
    gate.close(); // opened once every stream has its first token
    let firsts = 0;
    const streams = bodies.filter((b) => b.stream === true).length;
    const send = async (body: Body) => {
      if (body.stream !== true) return { ...(await chat(s, body)), chunks: 0, whileGenerating: undefined };
      const params = body as unknown as OpenAI.ChatCompletionCreateParamsStreaming;
      const { data, response } = await s.client.chat.completions.create(params).withResponse();
      const id = response.headers.get('x-request-id')!;
      let text = '';
      let chunks = 0;
      let whileGenerating: boolean | undefined;
      let usage: number | undefined;
      for await (const chunk of data) {
        const delta = chunk.choices[0]?.delta.content ?? '';
        if (delta !== '' && whileGenerating === undefined) {
          // The first token reached the client while the decode engine was still generating.
          whileGenerating = engineLog(s.decode).some(
            (l) => l.headers['x-request-id'] === id && l.tEndMs === null,
          );
          if (++firsts === streams) gate.open();
        }
        if (delta !== '') chunks++;
        text += delta;
        if (chunk.usage) usage = chunk.usage.completion_tokens;
      }
      return { id, text, chunks, whileGenerating, usage };
    };
    const answers = await Promise.all(bodies.map(send));

    const ids = answers.map((a) => a.id);
    expect(new Set(ids).size).toBe(bodies.length);
    for (const [i, body] of bodies.entries()) {
      const { decode } = assertLegs(s, ids[i]!, body, 'chat', '/v1/chat/completions');
      expect(decode.leg.status).toBe(200);
    }
    // The decode's answer is what the client got: non-streaming text, and streams chunk by chunk.
    expect(answers[0]!.text).toBe(' Once upon a time the');
    for (const a of answers.slice(3)) {
      expect(a.whileGenerating).toBe(true);
      expect(a.chunks).toBe(a === answers[5] ? 4 : 8);
    }
    expect(answers[4]!.usage).toBe(8);
    expect(answers[3]!.usage).toBeUndefined(); // no stream_options: no usage chunk
  });

  it('completions and the Responses API: the same split, with max_output_tokens on Responses', async () => {
    const completion = { model: 'sim-model', prompt: 'Once upon a time', max_tokens: 3, min_tokens: 1 };
    const c = await s.client.completions
      .create(completion as unknown as OpenAI.CompletionCreateParamsNonStreaming)
      .withResponse();
    expect(c.data.choices[0]?.text).toBe(' Once upon a');
    assertLegs(s, c.response.headers.get('x-request-id')!, completion, 'completions', '/v1/completions');

    const responses = { model: 'sim-model', input: 'Tell me about KV caches', max_output_tokens: 5 };
    const r = await s.client.responses.create(responses).withResponse();
    expect(r.data.output_text).toBe(' Once upon a time the');
    assertLegs(s, r.response.headers.get('x-request-id')!, responses, 'responses', '/v1/responses');
  });

  it('a prefill answering without kv_transfer_params: the decode still runs and the metric counts it', async () => {
    const before = sample(await s.metrics(), 'vllm_router_pd_kv_transfer_params_missing_total');
    for (const p of s.prefill) p.engine.configure({ omitKvParams: true });
    try {
      const body = { model: 'sim-model', messages: chatMessages('No handle this time'), max_tokens: 3 };
      const { data, response } = await s.client.chat.completions.create(body).withResponse();
      expect(data.choices[0]?.message.content).toBe(' Once upon a');
      const { prefill, decode } = legPair(s, response.headers.get('x-request-id')!);
      expect(prefill.leg.body).toEqual(expectedPrefill(body, 'chat'));
      expect(decode.leg.body).toEqual(body); // the original request: the decode engine prefills locally
      const after = sample(await s.metrics(), 'vllm_router_pd_kv_transfer_params_missing_total');
      expect(after - before).toBe(1);
    } finally {
      for (const p of s.prefill) p.engine.configure({ omitKvParams: false });
    }
  });

  it('GET /workers shows the roles, /v1/models lists the decode pool, /get_loads every worker at 0', async () => {
    const { workers } = (await (await s.api('/workers')).json()) as {
      workers: { url: string; role: string; bootstrap_port?: number | null }[];
    };
    expect(workers.map((w) => [w.url, w.role])).toEqual([
      [s.prefill[0]!.url, 'prefill'],
      [s.prefill[1]!.url, 'prefill'],
      [s.decode[0]!.url, 'decode'],
      [s.decode[1]!.url, 'decode'],
    ]);
    expect(workers[1]!.bootstrap_port).toBe(8998);
    const models = [];
    for await (const m of s.client.models.list()) models.push(m.id);
    expect(models.sort()).toEqual(['decode-model', 'sim-model']);
    await s.idle();
    const loads = await s.loads();
    expect(Object.keys(loads).sort()).toEqual([...s.prefill, ...s.decode].map((e) => e.url).sort());
  });

  it('the vllm_router_pd_* metrics count the requests and time both legs', async () => {
    await s.idle(); // every decode's duration is recorded when its answer ends
    const text = await s.metrics();
    const decodes = engineLog(s.decode).length;
    expect(decodes).toBe(9);
    expect(sample(text, 'vllm_router_pd_requests_total{connector="nixl"}')).toBe(decodes);
    expect(sample(text, 'vllm_router_pd_prefill_duration_seconds_count')).toBe(decodes);
    expect(sample(text, 'vllm_router_pd_decode_duration_seconds_count')).toBe(decodes);
    expect(sample(text, 'vllm_router_pd_prefill_duration_seconds_sum')).toBeGreaterThan(0);
    expect(sample(text, 'vllm_router_pd_decode_duration_seconds_sum')).toBeGreaterThan(0);
  });

  it('POST /workers adds a prefill worker (role, bootstrap_port) that then gets prefill legs', async () => {
    const extra = await startSimEngine({ id: 'prefill-extra', ttftMs: 5, host: '127.0.0.1', port: 0 });
    try {
      const res = await s.api('/workers', {
        method: 'POST',
        body: { url: extra.url, role: 'prefill', bootstrap_port: extra.port },
      });
      expect(res.status).toBe(201);
      const view = (await (await s.api(`/workers/${encodeURIComponent(extra.url)}`)).json()) as Body;
      expect(view).toMatchObject({
        url: extra.url,
        role: 'prefill',
        bootstrap_port: extra.port,
        healthy: true,
      });
      // Fresh prompts are cache misses: the least-processed prefill worker (the new one) gets one soon.
      for (let i = 0; i < 3 && extra.engine.log.length === 0; i++) {
        const question = `${crypto.randomUUID()} unrelated question`;
        await s.client.chat.completions.create({
          model: 'sim-model',
          messages: [{ role: 'user', content: question }],
        });
      }
      expect(extra.engine.log).toHaveLength(1);
      expect((extra.engine.log[0]!.body as Body).kv_transfer_params).toEqual(NIXL_PREFILL);
      expect(
        engineLog(s.decode).some(
          (l) => l.headers['x-request-id'] === extra.engine.log[0]!.headers['x-request-id'],
        ),
      ).toBe(true);
    } finally {
      await s.api(`/workers/${encodeURIComponent(extra.url)}`, { method: 'DELETE' });
      await extra.close();
    }
  });
});

describe('NIXL with --intra-node-data-parallel-size 2', () => {
  let s: PdStack;
  beforeAll(async () => {
    s = await startPdStack({ flags: () => ['--intra-node-data-parallel-size', '2'] });
  });
  afterAll(() => s?.stop());

  it('each URL is two DP-rank workers; both legs carry x-data-parallel-rank', async () => {
    const { workers } = (await (await s.api('/workers')).json()) as {
      workers: { url: string; role: string; dp_rank?: number }[];
    };
    expect(workers.map((w) => [w.url, w.role, w.dp_rank])).toEqual([
      ...s.prefill.flatMap((e) => [0, 1].map((r) => [e.url, 'prefill', r])),
      ...s.decode.flatMap((e) => [0, 1].map((r) => [e.url, 'decode', r])),
    ]);
    // Unrelated prompts are cache misses: one after another, each goes to the least-processed
    // worker, so every rank of every engine gets one.
    const seen = { prefill: new Set<string>(), decode: new Set<string>() };
    for (let i = 0; i < 4; i++) {
      const body = {
        model: 'sim-model',
        messages: [{ role: 'user' as const, content: `${crypto.randomUUID()} is an unrelated question` }],
        max_tokens: 2,
      };
      const { id } = await chat(s, body);
      const { prefill, decode } = assertLegs(s, id, body, 'chat', '/v1/chat/completions');
      const p = prefill.leg.headers['x-data-parallel-rank'];
      seen.prefill.add(`${prefill.engine.url}#${p}`);
      seen.decode.add(`${decode.engine.url}#${decode.leg.headers['x-data-parallel-rank']}`);
      // The prefill engine's handle names the rank that prefilled (it read the header).
      expect((decode.leg.body as Body).kv_transfer_params).toMatchObject({
        remote_engine_id: `${prefill.engine.engine.id}-dp${p}`,
      });
    }
    const all = (engines: RunningEngine[]) => new Set(engines.flatMap((e) => [`${e.url}#0`, `${e.url}#1`]));
    expect(seen.prefill).toEqual(all(s.prefill));
    expect(seen.decode).toEqual(all(s.decode));
  });
});
