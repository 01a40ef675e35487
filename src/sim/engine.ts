// A simulated vLLM engine (OpenAI-compatible server) as a Hono app. Runtime-agnostic: Web APIs and
// hono only, so it runs in-process (engine.fetch), under Node (node.ts), Deno and workerd.
import { Hono } from 'hono';
import { resolveOptions } from './config.ts';
import { metricsText, registerControlRoutes, statsOf } from './control.ts';
import { handleInference } from './inference.ts';
import { createFailurePlanner } from './plan.ts';
import { isTransportError, jsonResponse } from './respond.ts';
import { createState, resetState } from './state.ts';
import type { SimEngine, SimLogEntry, SimLogKind, SimOptions } from './types.ts';

export { defaultSleep, SIM_DEFAULTS } from './config.ts';
export type {
  ConnectionHook,
  FailureMode,
  FailurePlan,
  SimConfig,
  SimEngine,
  SimLogEntry,
  SimLogKind,
  SimOptions,
  SimSleep,
  SimStats,
} from './types.ts';
export { metricsText };

export function createSimEngine(options: Partial<SimOptions> = {}): SimEngine {
  const state = createState(resolveOptions(options));
  const app = new Hono();

  const configure = (partial: Partial<SimOptions>) => {
    const before = state.config;
    const next = resolveOptions(partial, before);
    state.config = next;
    state.cache.resize(next.cacheBlocks, next.blockChars);
    if (partial.failure !== undefined || partial.seed !== undefined) {
      state.planner = createFailurePlanner(next.failure, next.seed);
    }
    if (partial.queryFailFirst !== undefined) state.queries = 0;
    state.slots.drain();
  };
  const reset = () => resetState(state);
  const stats = () => statsOf(state);

  app.post('/v1/chat/completions', (c) => handleInference(state, c, 'chat'));
  app.post('/v1/completions', (c) => handleInference(state, c, 'completions'));
  app.post('/v1/embeddings', (c) => handleInference(state, c, 'embeddings'));
  app.post('/v1/responses', (c) => handleInference(state, c, 'responses'));
  app.post('/generate', (c) => handleInference(state, c, 'generate'));
  registerControlRoutes(app, { state, configure, reset, stats });
  app.post('/v1/*', (c) => handleInference(state, c, 'echo'));

  // FastAPI's answer to unknown routes, as vLLM gives it.
  app.notFound(() => jsonResponse(404, { detail: 'Not Found' }, { 'x-sim-engine': state.config.id }));
  app.onError((err) => {
    // Hang, reset and client aborts must reach the caller as a rejected fetch, not a 500.
    if (isTransportError(err)) throw err;
    const message = err instanceof Error ? err.message : String(err);
    return jsonResponse(
      500,
      {
        error: {
          message: `sim engine error: ${message}`,
          type: 'InternalServerError',
          param: null,
          code: 500,
        },
      },
      { 'x-sim-engine': state.config.id },
    );
  });

  const engine: SimEngine = {
    get id() {
      return state.config.id;
    },
    app,
    fetch: async (req: Request) => app.fetch(req),
    get log(): readonly SimLogEntry[] {
      return state.log.list('inference');
    },
    get probeLog(): readonly SimLogEntry[] {
      return state.log.list('probe');
    },
    get config() {
      return state.config;
    },
    configure,
    reset,
    stats,
    waitForLog(predicate: (e: SimLogEntry) => boolean, timeoutMs = 5000, kind: SimLogKind = 'inference') {
      return state.log.waitFor(predicate, timeoutMs, kind);
    },
  };
  return engine;
}
