/**
 * The core app with nothing but memory around it: `createRouter` from a command line, requests
 * through Hono's `app.request()`, engines that are simulated vLLM engines reached through an
 * in-memory fetch, a fake clock (backoffs fire only when the clock is driven) and a seeded random.
 * Every lease the fleet hands out is tracked, so each test can end by checking that each one was
 * released exactly once.
 */

import { afterEach, expect } from 'vitest';
import { resolveConfig } from '../../src/core/config/load.ts';
import type { Fleet } from '../../src/core/fleet/fleet.ts';
import { createRouter, type Router } from '../../src/core/router.ts';
import { createSimEngine, type SimEngine, type SimOptions, type SimSleep } from '../../src/sim/engine.ts';
import { driveClock, FakeClock, seededRandom } from '../support/fake-clock.ts';
import { type InMemoryUpstream, inMemoryUpstream } from '../support/in-memory-upstream.ts';

/** A long system prompt every conversation shares (what cache_aware routes on). */
export const SYSTEM_PROMPT = [
  'You are the support assistant of the Jungfrau mountain railway.',
  'Answer in the language of the question, in at most three sentences, politely and precisely.',
  'Timetables change with the seasons: always name the season a departure time belongs to.',
  'Never promise a refund; point to the ticket office at Interlaken Ost for refunds instead.',
  'If the weather closes the line, say so first, then suggest the valley walks near Lauterbrunnen.',
].join(' ');

export type ErrorBody = { error: { message: string; type: string; code: string; param: string | null } };

/** A chat request sharing SYSTEM_PROMPT; `extra` adds or overrides fields. */
export function chatBody(question: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    model: 'sim-model',
    messages: [
      { role: 'system', content: SYSTEM_PROMPT },
      { role: 'user', content: question },
    ],
    ...extra,
  };
}

/** The engine never waits: whatever it is asked for is ready (no real time passes in these tests). */
export const ready: SimSleep = async () => {};

/** The engine is generating and never finishes a wait on its own; only the request's end stops it. */
export const stalled: SimSleep = (_ms, signal) =>
  new Promise<void>((resolve) => {
    if (!signal || signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });

/**
 * With a `ready` sleep and an inter-token latency no test ever reaches in real time, a streaming
 * engine hands over exactly one token event per read (its chunks are never coalesced).
 */
const ONE_TOKEN_PER_READ_MS = 3_600_000;

export interface AppStack {
  router: Router<Fleet>;
  clock: FakeClock;
  net: InMemoryUpstream;
  engines: Record<string, SimEngine>;
  logs: string[];
  /**
   * `app.request(path, init)`, firing the fake clock's backoff timers until the response head is
   * in (`drive: false`: time stands still, the test advances the clock itself).
   */
  request(path: string, init?: RequestInit, drive?: boolean): Promise<Response>;
  /** POST a JSON body (an object is serialised) to `path` (default /v1/chat/completions). */
  post(body: unknown, options?: PostOptions): Promise<Response>;
  /** Waits, without moving the clock, until the router has asked for `n` backoffs; returns them. */
  waitForBackoffs(n: number): Promise<number[]>;
  /** A counter or gauge from GET /metrics (the sum of its series matching `labels`). */
  metric(name: string, labels?: string): Promise<number>;
  /** Inference calls the engines were sent, in order: `a.test 503`, `b.test 200`, `a.test refused`. */
  inference(): string[];
  /** The backoff delays the router asked the clock for since start (the request deadline left out). */
  backoffs(): number[];
  /** Worker loads by worker id. */
  loads(): Record<string, number>;
  /** Every lease taken was released exactly once, no load is left and no timer is pending. */
  expectSettled(): void;
}

export interface PostOptions {
  path?: string;
  headers?: Record<string, string>;
  signal?: AbortSignal;
  /** Fire backoff timers while waiting for the response head (default true). */
  drive?: boolean;
}

const started: AppStack[] = [];

/** Registers the after-each check of every stack a test started: all leases released, exactly once. */
export function checkLeasesAfterEach(): void {
  afterEach(() => {
    const stacks = started.splice(0);
    for (const stack of stacks) stack.expectSettled();
  });
}

/**
 * Builds the router from a command line (`--worker-urls http://a.test http://b.test ...`) with an
 * engine per host, then runs its startup (health checks and model discovery, in memory).
 */
export async function startApp(
  commandLine: string,
  engines: Record<string, Partial<SimOptions>> = {},
  options: {
    seed?: number;
    /** The peer address every request comes from (default 127.0.0.1, a local client). */
    peer?: string;
    /** Admin routes without --admin-api-key (default loopback, as on Node and Deno). */
    adminWithoutKey?: 'loopback' | 'off';
    /** Environment the config is resolved with. */
    env?: Record<string, string>;
  } = {},
): Promise<AppStack> {
  const argv = commandLine.trim() === '' ? [] : commandLine.trim().split(/\s+/);
  const { config } = resolveConfig({
    argv,
    env: options.env ?? {},
    readTextFile: () => {
      throw new Error('these tests read no files');
    },
  });
  const clock = new FakeClock();
  const sims: Record<string, SimEngine> = {};
  for (const [host, o] of Object.entries(engines)) {
    sims[host] = createSimEngine({ id: host, tokens: 4, itlMs: ONE_TOKEN_PER_READ_MS, sleep: ready, ...o });
  }
  const net = inMemoryUpstream(sims);
  const logs: string[] = [];
  const router = createRouter(config, {
    upstream: net.upstream,
    logSink: (line) => logs.push(line),
    clock,
    random: seededRandom(options.seed ?? 7),
    peerAddress: () => options.peer ?? '127.0.0.1',
    ...(options.adminWithoutKey ? { adminWithoutKey: options.adminWithoutKey } : {}),
  });

  // Exactly-once release: every lease route() hands out must be settled once, and only once.
  const { fleet } = router;
  const issued: number[] = [];
  const settled: number[] = [];
  const route = fleet.route.bind(fleet);
  const settle = fleet.settle.bind(fleet);
  fleet.route = (input) => {
    const result = route(input);
    if (result.ok) issued.push(result.lease);
    return result;
  };
  fleet.settle = (lease, outcome) => {
    settled.push(lease);
    return settle(lease, outcome);
  };

  await router.start(async (ms) => clock.advance(ms));
  clock.requested.length = 0; // startup probe timeouts are not backoffs
  const deadlineMs = config.server.requestTimeoutSecs * 1000;

  const request = (path: string, init: RequestInit = {}, drive = true) => {
    const res = Promise.resolve(router.app.request(path, init));
    return drive ? driveClock(clock, res) : res;
  };
  const backoffs = () => clock.requested.filter((ms) => ms !== deadlineMs);

  const stack: AppStack = {
    router,
    clock,
    net,
    engines: sims,
    logs,
    request,
    post: (body, o = {}) =>
      request(
        o.path ?? '/v1/chat/completions',
        {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...o.headers },
          body: typeof body === 'string' || body instanceof ReadableStream ? body : JSON.stringify(body),
          ...(body instanceof ReadableStream ? { duplex: 'half' } : {}),
          ...(o.signal ? { signal: o.signal } : {}),
        } as RequestInit,
        o.drive ?? true,
      ),
    inference: () =>
      net.calls
        .filter((c) => c.method === 'POST')
        .map((c) => `${c.host} ${c.outcome === 'response' ? c.status : c.outcome}`),
    backoffs,
    async waitForBackoffs(n) {
      for (let turn = 0; turn < 10_000 && backoffs().length < n; turn++) {
        await new Promise((resolve) => setImmediate(resolve));
      }
      expect(backoffs(), `waiting for ${n} backoff(s)`).toHaveLength(n);
      return backoffs();
    },
    async metric(name, labels = '') {
      const text = await (await router.app.request('/metrics')).text();
      return text
        .split('\n')
        .filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `))
        .filter((line) => line.includes(labels))
        .reduce((sum, line) => sum + Number(line.split(' ').at(-1)), 0);
    },
    loads: () => Object.fromEntries(fleet.listWorkers().map((w) => [w.id, w.load])),
    expectSettled() {
      const byNumber = (a: number, b: number) => a - b;
      expect([...settled].sort(byNumber), 'each lease released exactly once').toEqual(
        [...issued].sort(byNumber),
      );
      expect(fleet.inFlight, 'leases in flight').toBe(0);
      for (const [id, load] of Object.entries(stack.loads())) expect(load, `load of ${id}`).toBe(0);
      expect(clock.pendingTimers, 'timers left pending (request deadlines, backoffs)').toBe(0);
    },
  };
  started.push(stack);
  return stack;
}

/** Reads a streaming body to its end, one entry per chunk the router handed over. */
export async function readChunks(res: Response): Promise<string[]> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  const chunks: string[] = [];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return chunks;
    chunks.push(decoder.decode(value, { stream: true }));
  }
}

/** The `data:` payloads of an SSE text, in order. */
export function sseData(text: string): string[] {
  return text
    .split('\n\n')
    .filter((event) => event.startsWith('data: '))
    .map((event) => event.slice('data: '.length));
}

/** The content deltas of chat completion chunks, joined. */
export function sseContent(text: string): string {
  return sseData(text)
    .filter((d) => d !== '[DONE]')
    .map((d) => (JSON.parse(d) as { choices?: { delta?: { content?: string } }[] }).choices?.[0]?.delta)
    .map((delta) => delta?.content ?? '')
    .join('');
}
