// Non-inference routes of the simulated engine: health, models, metrics, cache flush, server info,
// the Mooncake bootstrap query, and the /admin API (config, log, stats, reset).
import type { Context, Hono } from 'hono';
import { flagsToOptions, optionsToFlags } from './config.ts';
import { engineIdForRank } from './inference.ts';
import { nowMs } from './log.ts';
import { modelsJson } from './openai-format.ts';
import { errorResponse, headerRecord, jsonResponse, readJson } from './respond.ts';
import type { SimState } from './state.ts';
import type { SimLogEntry, SimOptions, SimStats } from './types.ts';

export interface ControlDeps {
  state: SimState;
  configure(partial: Partial<SimOptions>): void;
  reset(): void;
  stats(): SimStats;
}

/** Logs a probe (non-inference, non-admin request) and settles it when the response is built. */
function probe(state: SimState, c: Context, answer: () => Response): Response {
  const entry = state.log.enabled
    ? state.log.open({
        kind: 'probe',
        tMs: nowMs(),
        method: c.req.method,
        path: c.req.path,
        headers: headerRecord(c.req.raw.headers),
        body: null,
      })
    : null;
  const res = answer();
  state.log.update(entry, { status: res.status, completed: true, tEndMs: nowMs() });
  return res;
}

export function registerControlRoutes(app: Hono, deps: ControlDeps): void {
  const { state } = deps;
  const id = () => state.config.id;
  const json = (status: number, body: object) =>
    jsonResponse(status, JSON.stringify(body), { 'x-sim-engine': id() });

  const health = (c: Context) =>
    probe(state, c, () => {
      state.counters.health_probes_total++;
      const status = state.config.unhealthy ? 503 : 200;
      return new Response(null, { status, headers: { 'content-length': '0', 'x-sim-engine': id() } });
    });
  app.get('/health', health);
  app.get('/health_generate', health);
  app.get('/v1/models', (c) =>
    probe(state, c, () =>
      json(200, modelsJson(state.config.models, state.startedAtSec, state.config.maxModelLen)),
    ),
  );
  app.get('/version', (c) => probe(state, c, () => json(200, { version: 'sim' })));
  app.get('/metrics', (c) =>
    probe(
      state,
      c,
      () =>
        new Response(metricsText(state), {
          status: 200,
          headers: { 'content-type': 'text/plain; version=0.0.4; charset=utf-8', 'x-sim-engine': id() },
        }),
    ),
  );
  const flush = (c: Context) =>
    probe(state, c, () => {
      state.cache.clear();
      return json(200, { message: 'Cache flushed.' });
    });
  app.post('/flush_cache', flush);
  app.post('/reset_prefix_cache', flush);
  app.get('/get_server_info', (c) =>
    probe(state, c, () =>
      json(200, {
        id: id(),
        engine: 'vllm-sim',
        served_model_name: state.config.models,
        model_path: state.config.models[0],
        max_model_len: state.config.maxModelLen,
        max_running_requests: state.config.maxRunning,
        dp_size: state.config.dpSize,
        tp_size: 1,
        running: state.slots.running,
        waiting: state.slots.waiting,
      }),
    ),
  );
  app.get('/get_model_info', (c) =>
    probe(state, c, () =>
      json(200, {
        model_path: state.config.models[0],
        tokenizer_path: state.config.models[0],
        is_generation: true,
      }),
    ),
  );
  // Mooncake transfers this engine prefilled: a simulated decode engine waits here for its KV.
  app.get('/sim/kv/:id', async (c) => {
    const ms = Math.min(60_000, Math.max(0, Number(c.req.query('wait_ms') ?? 0) || 0));
    const ok = await state.kv.wait(c.req.param('id'), ms, c.req.raw.signal);
    return json(ok ? 200 : 404, { transfer_id: c.req.param('id'), ready: ok });
  });
  // Mooncake bootstrap server: {dp_rank: {engine_id, worker_addr: {tp_rank: {pp_rank: addr}}}}.
  app.get('/query', (c) =>
    probe(state, c, () => {
      if (++state.queries <= state.config.queryFailFirst) {
        return errorResponse(id(), 503, 'bootstrap server not ready');
      }
      const out: Record<string, unknown> = {};
      for (let rank = 0; rank < state.config.dpSize; rank++) {
        out[String(rank)] = {
          engine_id: engineIdForRank(id(), rank),
          worker_addr: { '0': { '0': `${state.config.kvHost}:${state.config.kvPort + rank}` } },
        };
      }
      return json(200, out);
    }),
  );

  app.post('/admin/config', async (c) => {
    const { json: settings } = await readJson(c);
    if (typeof settings !== 'object' || settings === null || Array.isArray(settings)) {
      return errorResponse(
        id(),
        400,
        'expected a JSON object of kebab-case settings, e.g. {"fail-mode":"none"}',
      );
    }
    try {
      deps.configure(flagsToOptions(settings as Record<string, unknown>, state.config));
    } catch (err) {
      return errorResponse(id(), 400, err instanceof Error ? err.message : String(err));
    }
    return json(200, { ok: true, config: optionsToFlags(state.config) });
  });
  app.get('/admin/config', () => json(200, optionsToFlags(state.config)));
  app.get('/admin/log', (c) => {
    const kind = c.req.query('kind') ?? 'inference';
    let entries: SimLogEntry[];
    if (kind === 'inference') entries = state.log.list('inference');
    else if (kind === 'probe') entries = state.log.list('probe');
    else if (kind === 'health') entries = state.log.list('probe').filter((e) => e.path === '/health');
    else if (kind === 'all')
      entries = [...state.log.list('inference'), ...state.log.list('probe')].sort((a, b) => a.seq - b.seq);
    else return errorResponse(id(), 400, `unknown log kind ${kind} (inference, health, probe, all)`);
    return json(200, entries);
  });
  app.get('/admin/stats', () => json(200, deps.stats()));
  app.post('/admin/reset', () => {
    deps.reset();
    return json(200, { ok: true });
  });
}

export function statsOf(state: SimState): SimStats {
  const c = state.counters;
  return {
    id: state.config.id,
    ...c,
    running: state.slots.running,
    waiting: state.slots.waiting,
    prefix_queries_blocks: state.cache.queries,
    prefix_hits_blocks: state.cache.hits,
    prefix_hit_rate: state.cache.queries ? state.cache.hits / state.cache.queries : 0,
    cache_size_blocks: state.cache.size,
    uptime_s: Math.floor(Date.now() / 1000) - state.startedAtSec,
  };
}

/** Prometheus text exposition with vLLM's metric names. */
export function metricsText(state: SimState): string {
  const labels = `{model_name=${JSON.stringify(state.config.models[0])}}`;
  const tokensPerBlock = Math.floor(state.config.blockChars / 4);
  const { queries, hits } = state.cache;
  const cap = state.config.cacheBlocks;
  const usage = cap > 0 ? state.cache.size / cap : 0;
  const rows: Array<[string, 'gauge' | 'counter', string, number]> = [
    [
      'vllm:num_requests_running',
      'gauge',
      'Number of requests in model execution batches.',
      state.slots.running,
    ],
    [
      'vllm:num_requests_waiting',
      'gauge',
      'Number of requests waiting to be processed.',
      state.slots.waiting,
    ],
    ['vllm:gpu_cache_usage_perc', 'gauge', 'GPU KV-cache usage. 1 means 100 percent usage.', usage],
    ['vllm:kv_cache_usage_perc', 'gauge', 'KV-cache usage. 1 means 100 percent usage.', usage],
    [
      'vllm:gpu_prefix_cache_hit_rate',
      'gauge',
      'GPU prefix cache block hit rate.',
      queries ? hits / queries : 0,
    ],
    [
      'vllm:prefix_cache_queries_total',
      'counter',
      'Prefix cache queries, in terms of number of queried tokens.',
      queries * tokensPerBlock,
    ],
    [
      'vllm:prefix_cache_hits_total',
      'counter',
      'Prefix cache hits, in terms of number of cached tokens.',
      hits * tokensPerBlock,
    ],
    [
      'vllm:request_success_total',
      'counter',
      'Count of successfully processed requests.',
      state.counters.success_total,
    ],
    [
      'vllm:prompt_tokens_total',
      'counter',
      'Number of prefill tokens processed.',
      state.counters.prompt_tokens_total,
    ],
    [
      'vllm:generation_tokens_total',
      'counter',
      'Number of generation tokens processed.',
      state.counters.generation_tokens_total,
    ],
  ];
  let out = '';
  for (const [name, type, help, value] of rows) {
    out += `# HELP ${name} ${help}\n# TYPE ${name} ${type}\n${name}${labels} ${Number.isInteger(value) ? value : value.toFixed(6)}\n`;
  }
  return out;
}
