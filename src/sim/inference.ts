// Inference routes of the simulated engine: validation, failure plan, prefix cache, token timing.

import type { Context } from 'hono';
import { type BodyFault, deliverJson, deliverSse, hang, reset } from './deliver.ts';
import { embeddingInputs, embeddingsJson } from './embeddings.ts';
import { pullKv } from './kv-transfer.ts';
import { nowMs } from './log.ts';
import {
  type CompletionShape,
  completionJson,
  errorBody,
  errorType,
  generatedText,
  generateEvents,
  generateJson,
  type JsonObject,
  promptText,
  promptTokens,
  responsesJson,
  sseTerminal,
  sseTokenEvents,
  type Usage,
} from './openai-format.ts';
import { abortError, errorResponse, headerRecord, readJson, transportError } from './respond.ts';
import { RequestTracker, type SimState } from './state.ts';

export type InferenceRoute = 'chat' | 'completions' | 'generate' | 'responses' | 'embeddings' | 'echo';
type GenerationRoute = 'chat' | 'completions' | 'generate' | 'responses';

export async function handleInference(state: SimState, c: Context, route: InferenceRoute): Promise<Response> {
  const tMs = nowMs();
  const { raw, json } = await readJson(c);
  const entry = state.log.open({
    kind: 'inference',
    tMs,
    method: c.req.method,
    path: c.req.path,
    headers: state.log.enabled ? headerRecord(c.req.raw.headers) : {},
    body: json ?? null,
  });
  const tracker = new RequestTracker(state, c, entry);
  state.counters.requests_total++;
  const id = state.config.id;
  const refuse = (status: number, message: string) => {
    tracker.finish({ status, completed: true });
    return errorResponse(id, status, message);
  };

  const isObject = typeof json === 'object' && json !== null && !Array.isArray(json);
  if (route !== 'echo' && json !== undefined && !isObject) return refuse(400, 'Invalid JSON body');
  const body = (isObject ? json : {}) as JsonObject;
  if (route !== 'echo' && body.model !== undefined && !state.config.models.includes(String(body.model))) {
    return refuse(404, `The model \`${String(body.model)}\` does not exist.`);
  }
  const invalid = validate(route, body);
  if (invalid) return refuse(400, invalid);

  const injected = state.planner.next();
  tracker.note({ injected });
  if (injected) state.counters.failed_injected_total++;
  if (injected === 'status') return failStatus(state, tracker);
  if (injected === 'hang') return hang(tracker);
  if (injected === 'reset') return reset(state, tracker);
  const fault: BodyFault = injected === 'midstream' || injected === 'stall' ? injected : null;

  if (!(await tracker.run())) throw transportError(abortError(c.req.raw.signal));
  const model = typeof body.model === 'string' && body.model ? body.model : state.config.models[0]!;
  if (route === 'embeddings') {
    const inputs = embeddingInputs(body.input)!;
    const out = embeddingsJson(body, inputs, state.nextId('embd'), nowSec(), model);
    return deliverJson(state, tracker, {
      body: out,
      headers: { 'x-sim-engine': id },
      delayMs: state.config.ttftMs,
      fault,
      tokens: 0,
    });
  }
  if (route === 'echo') {
    const echoed = json === null ? raw : (json ?? null);
    return deliverJson(state, tracker, {
      body: { object: 'echo', method: c.req.method, path: c.req.path, body: echoed },
      headers: { 'x-sim-engine': id },
      delayMs: state.config.ttftMs,
      fault,
      tokens: 0,
    });
  }
  return generate(state, tracker, route, body, model, fault);
}

function validate(route: InferenceRoute, body: JsonObject): string | null {
  if (route === 'chat' && !Array.isArray(body.messages)) return '"messages" is required and must be a list';
  if (route === 'completions' && body.prompt === undefined) return '"prompt" is required';
  if (route === 'embeddings' && embeddingInputs(body.input) === null) {
    return '"input" must be a string or a list of strings or token ids';
  }
  if (route === 'responses' && body.stream === true) return 'streaming /v1/responses is not simulated';
  const cap = maxTokensOf(route, body);
  if (cap !== undefined && (typeof cap !== 'number' || !Number.isInteger(cap) || cap < 0)) {
    return 'max_tokens must be an integer >= 0';
  }
  return null;
}

function maxTokensOf(route: InferenceRoute, body: JsonObject): unknown {
  if (route === 'generate') {
    const sp = (body.sampling_params ?? {}) as JsonObject;
    return sp.max_new_tokens ?? undefined;
  }
  if (route === 'responses') return body.max_output_tokens ?? undefined;
  if (route === 'chat') return body.max_completion_tokens ?? body.max_tokens ?? undefined;
  return body.max_tokens ?? undefined;
}

function failStatus(state: SimState, tracker: RequestTracker): Response {
  const plan = state.config.failure;
  const status = plan.status ?? 503;
  const headers: Record<string, string> = { 'x-sim-engine': state.config.id };
  if (plan.retryAfter) headers['retry-after'] = plan.retryAfter;
  let text: string;
  if (plan.body !== undefined) {
    text = plan.body;
    headers['content-type'] = isJson(text) ? 'application/json' : 'text/plain; charset=utf-8';
  } else {
    text = JSON.stringify(errorBody(status, `simulated failure (${status})`, errorType(status)));
    headers['content-type'] = 'application/json';
  }
  tracker.finish({ status, completed: true });
  return new Response(text, { status, headers });
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

const nowSec = () => Math.floor(Date.now() / 1000);

async function generate(
  state: SimState,
  tracker: RequestTracker,
  route: GenerationRoute,
  body: JsonObject,
  model: string,
  fault: BodyFault,
): Promise<Response> {
  const cfg = state.config;
  const text = promptText(body, route);
  const { blocks, cached } = state.cache.lookup(text);
  tracker.note({ cachedBlocks: cached, promptBlocks: blocks });
  const cap = maxTokensOf(route, body) as number | undefined;
  const capped = cap !== undefined && (cap < cfg.tokens || body.ignore_eos === true);
  const n = capped ? cap : cfg.tokens;
  const finish = capped ? 'length' : 'stop';
  const prompt = promptTokens(text);
  const cachedTokens = Math.min(prompt, Math.floor((cached * cfg.blockChars) / 4));
  const usage: Usage = {
    prompt_tokens: prompt,
    completion_tokens: n,
    total_tokens: prompt + n,
    prompt_tokens_details: { cached_tokens: cachedTokens },
  };
  const kv = (body.kv_transfer_params ?? null) as JsonObject | null;
  const remoteKv = kv?.do_remote_prefill === true && (await kvArrived(state, tracker, kv));
  const uncachedCost = remoteKv ? 0 : (blocks - cached) * cfg.blockMs;
  const ttft = cfg.ttftMs + uncachedCost;
  const headers = { 'x-sim-engine': cfg.id, 'x-sim-cached-blocks': `${cached}/${blocks}` };
  const transfer =
    kv?.do_remote_decode === true && typeof kv.transfer_id === 'string' ? kv.transfer_id : undefined;
  const onSuccess = () => {
    if (transfer !== undefined) state.kv.done(transfer);
    state.counters.success_total++;
    state.counters.prompt_tokens_total += prompt;
    state.counters.generation_tokens_total += n;
  };
  const shape: CompletionShape = {
    id: state.nextId(route === 'chat' ? 'chatcmpl' : route === 'generate' ? 'gen' : 'cmpl'),
    created: nowSec(),
    model,
    chat: route === 'chat',
  };

  if (body.stream === true && route !== 'responses') {
    const streamOptions = (body.stream_options ?? {}) as JsonObject;
    const events =
      route === 'generate' ? generateEvents(shape.id, n, finish, usage) : sseTokenEvents(shape, n, finish);
    const terminal =
      route === 'generate'
        ? 'data: [DONE]\n\n'
        : sseTerminal(shape, streamOptions.include_usage === true ? usage : null);
    return deliverSse(state, tracker, {
      events,
      terminal,
      headers,
      ttftMs: ttft,
      itlMs: cfg.itlMs,
      fault,
      onSuccess,
    });
  }

  const out = generatedText(n);
  const params =
    kv?.do_remote_decode === true && !cfg.omitKvParams ? kvParams(state, tracker, shape, kv, text) : null;
  let json: JsonObject;
  if (route === 'generate') json = generateJson(shape.id, out, n, finish, usage);
  else if (route === 'responses') {
    json = responsesJson(`resp_${shape.id}`, shape.created, model, out, usage);
    if (params) json.kv_transfer_params = params;
  } else json = completionJson(shape, out, finish, usage, params);
  const delayMs = ttft + Math.max(0, n - 1) * cfg.itlMs;
  return deliverJson(state, tracker, { body: json, headers, delayMs, fault, tokens: n, onSuccess });
}

/** A remote-prefill decode: true when its KV is there (Mooncake: pulled from the prefill engine in time). */
async function kvArrived(state: SimState, tracker: RequestTracker, kv: JsonObject): Promise<boolean> {
  const wait = state.config.kvWaitMs;
  const bootstrap = kv.remote_bootstrap_addr;
  const id = kv.transfer_id;
  if (wait <= 0 || typeof bootstrap !== 'string' || typeof id !== 'string') return true;
  return pullKv(bootstrap, id, wait, tracker.signal);
}

/** What vLLM's NIXL connector returns from a prefill with `do_remote_decode: true`. */
function kvParams(
  state: SimState,
  tracker: RequestTracker,
  shape: CompletionShape,
  kv: JsonObject,
  text: string,
): JsonObject {
  const rank = dpRank(tracker.c);
  const blockCount = Math.max(1, Math.ceil(promptTokens(text) / 16));
  const params: JsonObject = {
    do_remote_prefill: true,
    do_remote_decode: false,
    remote_block_ids: Array.from({ length: blockCount }, (_, i) => i),
    remote_engine_id: engineIdForRank(state.config.id, rank),
    remote_request_id: tracker.c.req.header('x-request-id') ?? shape.id,
    remote_host: state.config.kvHost,
    remote_port: state.config.kvPort + rank,
    tp_size: 1,
  };
  if (kv.transfer_id !== undefined) params.transfer_id = kv.transfer_id;
  return params;
}

export function dpRank(c: Context): number {
  const rank = Number(c.req.header('x-data-parallel-rank') ?? 0);
  return Number.isInteger(rank) && rank >= 0 ? rank : 0;
}

export function engineIdForRank(id: string, rank: number): string {
  return `${id}-dp${rank}`;
}
