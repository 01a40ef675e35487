/**
 * A prefill/decode fleet on loopback for integration tests: simulated prefill and decode engines
 * (2 + 2 by default), a real router built from a real command line (`--vllm-pd-disaggregation
 * --prefill URL [PORT] ... --decode URL ...`, as the vLLM Router's users write it; only the
 * listeners are moved to 127.0.0.1 and port 0), and the official openai SDK as the client.
 */
import OpenAI from 'openai';
import { type NodeRouter, type NodeRouterOptions, startNodeRouter } from '../../src/adapters/node/server.ts';
import { resolveConfig } from '../../src/core/config/load.ts';
import type { RouterConfig } from '../../src/core/config/schema.ts';
import { type StartSimOptions, startSimEngine } from '../../src/sim/node.ts';
import type { SimLogEntry, SimSleep } from '../../src/sim/types.ts';
import type { RunningEngine } from './harness.ts';

export interface LogLine {
  level: string;
  msg: string;
  [field: string]: unknown;
}

export interface PdEngines {
  prefill: RunningEngine[];
  decode: RunningEngine[];
}

export interface PdStackOptions {
  prefills?: number;
  decodes?: number;
  /** Options of every engine, then per role (the engine's index is passed). */
  engine?: StartSimOptions;
  prefill?: (i: number) => StartSimOptions;
  decode?: (i: number) => StartSimOptions;
  /** The words after `--prefill` for each prefill engine (default: its URL). */
  prefillArg?: (e: RunningEngine, i: number) => string[];
  /** More flags (e.g. `--kv-connector mooncake`). */
  flags?: (e: PdEngines) => string[];
  router?: NodeRouterOptions;
}

export interface PdStack extends PdEngines {
  router: NodeRouter;
  config: RouterConfig;
  client: OpenAI;
  /** The router's JSON log lines (level info). */
  logs: LogLine[];
  api(path: string, init?: { method?: string; body?: unknown }): Promise<Response>;
  /** Each worker's load, by worker id (GET /get_loads). */
  loads(): Promise<Record<string, number>>;
  /** Resolves once every worker's load is 0 again (every lease released). */
  idle(): Promise<void>;
  /** The router's Prometheus text. */
  metrics(): Promise<string>;
  stop(): Promise<void>;
}

/**
 * A sleep for simulated engines that holds every timed wait while the gate is closed: an engine
 * given `{ sleep: gate.sleep, ttftMs: 1 }` holds its answer (or, with `itlMs: 1` and
 * `now: () => 0`, every token after the first) until the test opens the gate. Open at first.
 */
export function sleepGate() {
  let opened: Promise<void> = Promise.resolve();
  let release = () => {};
  const sleep: SimSleep = (ms, signal) => {
    if (!(ms > 0) || signal?.aborted) return Promise.resolve();
    return new Promise<void>((resolve) => {
      signal?.addEventListener('abort', () => resolve(), { once: true });
      void opened.then(resolve);
    });
  };
  return {
    sleep,
    close() {
      opened = new Promise<void>((resolve) => {
        release = resolve;
      });
    },
    open: () => release(),
  };
}

/** A system prompt longer than a few prompt blocks: requests share it as a prefix. */
export const SYSTEM_PROMPT = `You are a careful assistant for a router test suite. ${'Answer briefly and exactly. '.repeat(12)}`;

export function chatMessages(question: string) {
  return [
    { role: 'system' as const, content: SYSTEM_PROMPT },
    { role: 'user' as const, content: question },
  ];
}

/** An engine's log entry of one leg. */
export interface LegEntry {
  engine: RunningEngine;
  leg: SimLogEntry;
}

/** The log entries, per role, of the legs that carried this x-request-id. */
export function legsOf(s: PdEngines, requestId: string): { prefill: LegEntry[]; decode: LegEntry[] } {
  const find = (engines: RunningEngine[]) =>
    engines
      .flatMap((engine) =>
        engine.engine.log
          // A fresh prefill round carries `<id>-<round>` on both of its legs.
          .filter((l) => {
            const id = l.headers['x-request-id'];
            return (
              id === requestId ||
              (id?.startsWith(`${requestId}-`) === true && /^\d+$/.test(id.slice(requestId.length + 1)))
            );
          })
          .map((leg) => ({ engine, leg })),
      )
      .sort((a, b) => a.leg.tMs - b.leg.tMs); // in the order they arrived, whichever engine got them
  return { prefill: find(s.prefill), decode: find(s.decode) };
}

/** The one prefill leg and the one decode leg of a request (throws when there are more or fewer). */
export function legPair(s: PdEngines, requestId: string): { prefill: LegEntry; decode: LegEntry } {
  const { prefill, decode } = legsOf(s, requestId);
  const [p, d] = [prefill[0], decode[0]];
  if (prefill.length !== 1 || decode.length !== 1 || !p || !d) {
    throw new Error(`request ${requestId}: ${prefill.length} prefill and ${decode.length} decode legs`);
  }
  return { prefill: p, decode: d };
}

/** A chat request through the SDK (streamed when the body says so): its x-request-id and text. */
export async function chat(s: { client: OpenAI }, body: Record<string, unknown>) {
  if (body.stream === true) {
    const params = body as unknown as OpenAI.ChatCompletionCreateParamsStreaming;
    const { data, response } = await s.client.chat.completions.create(params).withResponse();
    let text = '';
    for await (const chunk of data) text += chunk.choices[0]?.delta.content ?? '';
    return { id: response.headers.get('x-request-id') ?? '', text };
  }
  const params = body as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming;
  const { data, response } = await s.client.chat.completions.create(params).withResponse();
  return { id: response.headers.get('x-request-id') ?? '', text: data.choices[0]?.message.content ?? '' };
}

export function engineLog(engines: RunningEngine[]): SimLogEntry[] {
  return engines.flatMap((e) => e.engine.log);
}

/** The value of one Prometheus sample (`name{labels}`), 0 when absent. */
export function sample(text: string, series: string): number {
  for (const line of text.split('\n')) {
    if (line.startsWith(`${series} `)) return Number(line.slice(series.length + 1));
  }
  return 0;
}

export async function startPdStack(options: PdStackOptions = {}): Promise<PdStack> {
  const start = (role: 'prefill' | 'decode', count: number) =>
    Promise.all(
      Array.from({ length: count }, (_, i) =>
        startSimEngine({
          id: `${role}-${i}`,
          ...options.engine,
          ...(role === 'prefill' ? options.prefill?.(i) : options.decode?.(i)),
          host: '127.0.0.1',
          port: 0,
        }),
      ),
    );
  const [prefill, decode] = await Promise.all([
    start('prefill', options.prefills ?? 2),
    start('decode', options.decodes ?? 2),
  ]);
  const engines = { prefill, decode };
  const all = [...prefill, ...decode];
  let router: NodeRouter | undefined;
  try {
    const argv = [
      '--vllm-pd-disaggregation',
      ...prefill.flatMap((e, i) => ['--prefill', ...(options.prefillArg?.(e, i) ?? [e.url])]),
      ...decode.flatMap((e) => ['--decode', e.url]),
      ...(options.flags?.(engines) ?? []),
    ];
    const resolved = resolveConfig({
      argv,
      env: {},
      readTextFile: () => {
        throw new Error('no config file in these tests');
      },
    }).config;
    const config: RouterConfig = {
      ...resolved,
      server: { ...resolved.server, host: '127.0.0.1', port: 0 },
      metrics: { ...resolved.metrics, host: '127.0.0.1', port: 0 },
      log: { ...resolved.log, level: 'info', json: true },
    };
    const logs: LogLine[] = [];
    router = await startNodeRouter(config, {
      logSink: (line) => void logs.push(JSON.parse(line) as LogLine),
      healthLoop: false,
      ...options.router,
    });
    const r = router;
    const api = (path: string, init: { method?: string; body?: unknown } = {}) =>
      fetch(`${r.url}${path}`, {
        method: init.method ?? 'GET',
        ...(init.body === undefined
          ? {}
          : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(init.body) }),
      });
    const loads = async () => {
      const body = (await (await api('/get_loads')).json()) as {
        workers: { worker: string; load: number }[];
      };
      return Object.fromEntries(body.workers.map((w) => [w.worker, w.load]));
    };
    return {
      ...engines,
      router: r,
      config,
      client: new OpenAI({ baseURL: `${r.url}/v1`, apiKey: 'sk-test', maxRetries: 0 }),
      logs,
      api,
      loads,
      async idle() {
        for (;;) {
          const values = Object.values(await loads());
          if (values.length > 0 && values.every((v) => v === 0)) return;
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      },
      metrics: async () => (await api('/metrics')).text(),
      async stop() {
        await r.close(0);
        await Promise.all(all.map((e) => e.close()));
      },
    };
  } catch (err) {
    await router?.close(0);
    await Promise.all(all.map((e) => e.close()));
    throw err;
  }
}
