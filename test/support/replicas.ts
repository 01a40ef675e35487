/**
 * Router replicas sharing one fleet through a store, in process. `fleetReplica` builds the core
 * side alone (a SharedFleet around its ReplicaFleet, as `createReplicaRouter` wires them) with the
 * sync's timings open to the test; `appReplica` is the whole router from a command line
 * (`createReplicaRouter`), its engines simulated vLLM engines reached in memory. Both run on a fake
 * clock: the sync's timers never fire on their own, a test calls `flushNow()` / `syncNow()` (or
 * `settle()`, both) and waits, bounded, for the other replicas to see the change (`eventually`).
 */
import OpenAI from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { vi } from 'vitest';
import { resolveConfig } from '../../src/core/config/load.ts';
import type { RouterConfig } from '../../src/core/config/schema.ts';
import type { FleetApi } from '../../src/core/contracts/fleet-api.ts';
import type { Clock } from '../../src/core/contracts/runtime.ts';
import type { SharedStore } from '../../src/core/contracts/shared-store.ts';
import { createFleetFromConfig } from '../../src/core/fleet/from-config.ts';
import type { ReplicaFleet } from '../../src/core/fleet/replica-fleet.ts';
import { SharedFleet } from '../../src/core/fleet/shared-fleet.ts';
import { StoreLink } from '../../src/core/fleet/store-link.ts';
import type { StoreSyncOptions } from '../../src/core/fleet/store-sync.ts';
import { createLogger } from '../../src/core/observability/logger.ts';
import { MetricsRegistry } from '../../src/core/observability/metrics.ts';
import { createReplicaRouter, createRouter, type Router, type RouterHost } from '../../src/core/router.ts';
import { createSimEngine, type SimEngine, type SimOptions } from '../../src/sim/engine.ts';
import { FakeClock, seededRandom } from './fake-clock.ts';
import { inMemoryUpstream } from './in-memory-upstream.ts';

/** Bounded polling for what another replica sees (the store's events arrive over real sockets). */
export const CONVERGE = { timeout: 5000, interval: 10 };

/** Polls `check` (which throws until it holds) within CONVERGE's bound. */
export function eventually<T>(check: () => T | Promise<T>): Promise<T> {
  return vi.waitFor(check, CONVERGE);
}

/** A router config from a command line (no environment, no files). */
export function configFrom(commandLine: string, env: Record<string, string> = {}): RouterConfig {
  const argv = commandLine.trim() === '' ? [] : commandLine.trim().split(/\s+/);
  return resolveConfig({
    argv,
    env,
    readTextFile: () => {
      throw new Error('these tests read no files');
    },
  }).config;
}

export interface FleetReplica<C extends Clock = FakeClock> {
  fleet: SharedFleet;
  local: ReplicaFleet;
  clock: C;
  metrics: MetricsRegistry;
  logs: string[];
  /** Writes what is due, then takes load and (when due) the registry from the store. */
  settle(): Promise<void>;
}

/** A SharedFleet on `store`, connected (`sync.start()`) unless `start` is false. */
export async function fleetReplica<C extends Clock = FakeClock>(
  config: RouterConfig,
  store: SharedStore,
  options: { clock?: C; sync?: Partial<Omit<StoreSyncOptions, 'clock'>>; start?: boolean } = {},
): Promise<FleetReplica<C>> {
  const clock = options.clock ?? (new FakeClock() as unknown as C);
  const metrics = new MetricsRegistry();
  const logs: string[] = [];
  const logger = createLogger({
    level: 'info',
    json: false,
    sink: (line) => logs.push(line),
    now: () => clock.now(),
  });
  let shared: SharedFleet | undefined;
  const local = createFleetFromConfig(config, {
    clock,
    random: seededRandom(7),
    metrics,
    sharing: SharedFleet.sharingFor(() => shared),
  }) as ReplicaFleet;
  const link = new StoreLink(store, clock, logger, metrics);
  const fleet = new SharedFleet(local, link, {
    clock,
    sessionTtlMs: config.sll.sessionExpirationSecs * 1000,
    ...options.sync,
  });
  shared = fleet;
  if (options.start ?? true) await fleet.sync.start();
  return { fleet, local, clock, metrics, logs, settle: () => settleReplica(fleet) };
}

async function settleReplica(fleet: SharedFleet): Promise<void> {
  await fleet.sync.flushNow();
  await fleet.sync.syncNow();
}

/** Simulated engines by host (`a.test`), ready at once, as the app tests use them. */
export function simEngines(
  hosts: readonly string[],
  options: Partial<SimOptions> = {},
): Record<string, SimEngine> {
  const sleep = async () => {};
  return Object.fromEntries(hosts.map((h) => [h, createSimEngine({ id: h, tokens: 4, sleep, ...options })]));
}

export interface AppReplica {
  router: Router<FleetApi>;
  /** The shared fleet (undefined: a router on local state only, for comparison). */
  shared: SharedFleet | undefined;
  clock: FakeClock;
  logs: string[];
  request(input: string | URL | Request, init?: RequestInit): Promise<Response>;
  /** GET a JSON endpoint. */
  json<T = Record<string, unknown>>(path: string, init?: RequestInit): Promise<T>;
  /** Writes what is due and syncs (nothing without a store). */
  settle(): Promise<void>;
  /** The sum of a metric's series whose line contains `labels`. */
  metric(name: string, labels?: string): Promise<number>;
  close(): Promise<void>;
}

/**
 * A whole router from a command line, in front of `engines` (the same engine objects answer every
 * router built on them): a replica sharing its fleet through `store`, or without one a router on
 * its own state as before. Started: connected to the store and its workers probed.
 */
export async function appReplica(
  commandLine: string,
  engines: Record<string, SimEngine>,
  store?: SharedStore,
): Promise<AppReplica> {
  const config = configFrom(commandLine);
  const clock = new FakeClock();
  const logs: string[] = [];
  const host: RouterHost = {
    upstream: inMemoryUpstream(engines).upstream,
    logSink: (line) => logs.push(line),
    clock,
    random: seededRandom(7),
    peerAddress: () => '127.0.0.1',
    stateStore: true,
  };
  const replica = store ? createReplicaRouter(config, host, store) : undefined;
  const router: Router<FleetApi> = replica ?? createRouter(config, host);
  await router.start(async (ms) => clock.advance(ms));
  const request = async (input: string | URL | Request, init?: RequestInit) =>
    router.app.request(input, init);
  return {
    router,
    shared: replica?.fleet,
    clock,
    logs,
    request,
    json: async <T>(path: string, init?: RequestInit) => (await (await request(path, init)).json()) as T,
    settle: async () => {
      if (replica) await settleReplica(replica.fleet);
    },
    async metric(name, labels = '') {
      const text = await (await request('/metrics')).text();
      return text
        .split('\n')
        .filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `))
        .filter((line) => line.includes(labels))
        .reduce((sum, line) => sum + Number(line.split(' ').at(-1)), 0);
    },
    close: async () => {
      await replica?.close();
    },
  };
}

/** The long system prompt every conversation shares. */
export const SHARED_SYSTEM_PROMPT = [
  'You are the dispatcher assistant of a regional water utility.',
  'Answer field crews briefly, in plain words, and always repeat the asset number you were given.',
  'When a reading is outside its normal band, say which band and advise a second reading first.',
  'Never authorise a shutdown of a pumping station yourself: refer the crew to the duty engineer.',
  'Quote pressures in bar and flows in litres per second, rounded to one decimal place.',
].join(' ');

export interface Conversation {
  id: string;
  messages: ChatCompletionMessageParam[];
  /** The engine that answered each turn (x-routed-worker-id). */
  workers: string[];
}

/** A conversation on the shared system prompt whose first question carries its own long report. */
export function conversation(id: string): Conversation {
  const report = Array.from(
    { length: 24 },
    (_, i) =>
      `Station ${id}, line ${i}: pressure ${(2 + ((i * 7) % 10) / 10).toFixed(1)} bar, flow ${40 + i} l/s.`,
  ).join(' ');
  return {
    id,
    messages: [
      { role: 'system', content: SHARED_SYSTEM_PROMPT },
      { role: 'user', content: `Report ${id} follows. ${report} Is anything outside its band?` },
    ],
    workers: [],
  };
}

/**
 * One turn through the official SDK (streaming or not): the next question (none for the first
 * turn), the answer appended to the conversation, the engine recorded.
 */
export async function sendTurn(
  client: OpenAI,
  conv: Conversation,
  options: { question?: string; stream: boolean; headers?: Record<string, string>; maxTokens?: number },
): Promise<string> {
  if (options.question !== undefined) conv.messages.push({ role: 'user', content: options.question });
  const request = { headers: options.headers ?? {} };
  const body = {
    model: 'sim-model',
    messages: conv.messages,
    ...(options.maxTokens === undefined ? {} : { max_tokens: options.maxTokens }),
  };
  let content = '';
  let worker: string | null;
  if (options.stream) {
    const { data, response } = await client.chat.completions
      .create({ ...body, stream: true }, request)
      .withResponse();
    worker = response.headers.get('x-routed-worker-id');
    for await (const chunk of data) content += chunk.choices[0]?.delta.content ?? '';
  } else {
    const { data, response } = await client.chat.completions.create(body, request).withResponse();
    worker = response.headers.get('x-routed-worker-id');
    content = data.choices[0]?.message.content ?? '';
  }
  conv.messages.push({ role: 'assistant', content });
  if (worker === null) throw new Error('no x-routed-worker-id on the answer');
  conv.workers.push(worker);
  return worker;
}

/** The official SDK against an in-process router app (no sockets). */
export function sdkFor(app: Pick<AppReplica, 'request'>) {
  return new OpenAI({
    baseURL: 'http://router.test/v1',
    apiKey: 'unused',
    maxRetries: 0,
    fetch: async (input, init) => app.request(input instanceof Request ? input : String(input), init),
  });
}
