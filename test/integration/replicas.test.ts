/**
 * Several router processes (the built Node command) sharing one fleet through the real Redis
 * (`--state-store`, a key prefix of their own), simulated engines behind them over loopback HTTP,
 * the official SDK as the client: a conversation whose turns alternate between replicas stays on
 * one engine (cache_aware, and sticky_least_loaded with a session header), an admin change on one
 * replica is used by the others, and a replica killed with requests in flight leaves no load
 * behind and no session moved. Also the command line's rules for the store's password.
 */
import OpenAI from 'openai';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { parseRouterConfig } from '../../src/core/config/schema.ts';
import { createRouterOn } from '../../src/core/router.ts';
import { builtEntry, type RouterProcess, runToExit, spawnRouter } from '../runtime/router-process.ts';
import { type RunningEngine, startEngines } from '../support/harness.ts';
import { REDIS_URL, useRedis } from '../support/redis.ts';
import { type Conversation, conversation, sendTurn } from '../support/replicas.ts';

let ENTRY: string;
beforeAll(async () => {
  ENTRY = await builtEntry();
});

const redis = useRedis();
const EPHEMERAL = ['--port', '0', '--prometheus-port', '0', '--shutdown-drain-delay-secs', '0'];
const POLL = { timeout: 8000, interval: 25 };

let engines: RunningEngine[] = [];
let routers: RouterProcess[] = [];
afterEach(async () => {
  await Promise.all(routers.map((r) => r.stop(1000)));
  await Promise.all(engines.map((e) => e.close()));
  engines = [];
  routers = [];
});

/** `n` router processes on the test's key prefix, in front of `engines`. */
async function replicas(
  n: number,
  extra: string[] = [],
  env: Record<string, string> = {},
): Promise<RouterProcess[]> {
  const args = [
    ENTRY,
    '--worker-urls',
    ...engines.map((e) => e.url),
    '--state-store',
    REDIS_URL,
    '--state-store-key-prefix',
    redis.prefix(),
    ...EPHEMERAL,
    ...extra,
  ];
  const started = await Promise.all(
    Array.from({ length: n }, () => spawnRouter(process.execPath, args, { env })),
  );
  routers.push(...started);
  return started;
}

const client = (r: RouterProcess) => new OpenAI({ baseURL: `${r.url}/v1`, apiKey: 'unused', maxRetries: 0 });

async function metric(r: RouterProcess, name: string, labels = ''): Promise<number> {
  const text = await (await fetch(`${r.url}/metrics`)).text();
  return text
    .split('\n')
    .filter((line) => (line.startsWith(`${name}{`) || line.startsWith(`${name} `)) && line.includes(labels))
    .reduce((sum, line) => sum + Number(line.split(' ').at(-1)), 0);
}

type WorkerJson = { id: string; healthy: boolean; load: number };
const workers = async (r: RouterProcess) =>
  ((await (await fetch(`${r.url}/workers`)).json()) as { workers: WorkerJson[] }).workers;

/**
 * Turn after turn, all conversations at once, turn t of conversation k through replica (k + t)
 * mod n. Without session headers (cache_aware), each replica waits until it has applied every
 * prefix placement the others made in that turn before the next one (a client's next turn comes
 * after it read the answer; here it comes at once).
 */
async function converse(rs: RouterProcess[], convs: Conversation[], turns: number, sessions: boolean) {
  const clients = rs.map(client);
  for (let turn = 0; turn < turns; turn++) {
    const before = await Promise.all(
      rs.map((r) => metric(r, 'vllm_router_state_store_events_received_total', 'type="prefix"')),
    );
    const by = rs.map(() => 0);
    await Promise.all(
      convs.map((conv, k) => {
        const via = (k + turn) % rs.length;
        by[via] = (by[via] ?? 0) + 1;
        return sendTurn(clients[via] as OpenAI, conv, {
          ...(conv.messages.length > 2 ? { question: `Turn ${turn}: and line ${turn} of ${conv.id}?` } : {}),
          stream: (k + turn) % 2 === 1,
          maxTokens: 4, // short answers while conversing (the long streams below stay in flight)
          ...(sessions ? { headers: { 'x-session-id': conv.id } } : {}),
        });
      }),
    );
    if (sessions) continue;
    await vi.waitFor(async () => {
      const now = await Promise.all(
        rs.map((r) => metric(r, 'vllm_router_state_store_events_received_total', 'type="prefix"')),
      );
      expect(now.map((n, i) => n - (before[i] ?? 0))).toEqual(by.map((mine) => convs.length - mine));
    }, POLL);
  }
}

const oneEngineEach = (convs: Conversation[]) => {
  for (const c of convs) expect(new Set(c.workers), `${c.id}: ${c.workers.join(' ')}`).toHaveLength(1);
};

describe('router processes sharing one fleet', () => {
  it('cache_aware: turns alternating across three replicas stay on one engine; an admin add on one is used by the others', async () => {
    engines = await startEngines(3, { tokens: 4, ttftMs: 1, itlMs: 1 });
    const rs = await replicas(3);
    const [r0, r1] = rs as [RouterProcess, RouterProcess];
    const convs = Array.from({ length: 6 }, (_, k) => conversation(`p${k}`));
    await converse(rs, convs, 4, false);
    oneEngineEach(convs);
    expect(new Set(convs.map((c) => c.workers[0])).size, 'spread over the engines').toBeGreaterThan(1);

    const health = (await (await fetch(`${r1.url}/health`)).json()) as {
      state_store: Record<string, unknown>;
    };
    expect(health.state_store).toMatchObject({ url: REDIS_URL, connected: true, fallbacks: 0 });
    expect(await metric(r1, 'vllm_router_state_store_up')).toBe(1);

    const [extra] = await startEngines(1, { id: 'engine-extra', tokens: 4, ttftMs: 1, itlMs: 1 });
    engines.push(extra as RunningEngine);
    const added = await fetch(
      `${r0.url}/add_worker?url=${encodeURIComponent((extra as RunningEngine).url)}`,
      {
        method: 'POST',
      },
    );
    expect(added.status).toBe(201);
    await vi.waitFor(
      async () => {
        expect((await workers(r1)).find((w) => w.id === extra?.url)?.healthy).toBe(true);
      },
      { timeout: 1000, interval: 10 },
    );
    // Prompts no engine has seen go to the least-used engines, the new one among them.
    const used = new Set<string>();
    for (let i = 0; i < 3; i++) {
      const fresh: Conversation = {
        id: `fresh-${i}`,
        messages: [{ role: 'user', content: `Q${i}: unrelated.` }],
        workers: [],
      };
      used.add(await sendTurn(client(r1), fresh, { stream: false }));
    }
    expect(used).toContain(extra?.url);
  });

  it('sticky_least_loaded: sessions keep their engines across replicas, and through a replica killed mid-run', async () => {
    engines = await startEngines(3, { tokens: 400, ttftMs: 1, itlMs: 10 });
    // A store call slower than its timeout (a busy machine) decides on local state by design, and
    // a replica routes only to engines it has found healthy: neither is what this test is about.
    const rs = await replicas(3, ['--policy', 'sticky_least_loaded', '--state-store-timeout-ms', '5000']);
    const [r0, r1, r2] = rs as [RouterProcess, RouterProcess, RouterProcess];
    await vi.waitFor(async () => {
      for (const r of rs) expect((await workers(r)).filter((w) => w.healthy)).toHaveLength(engines.length);
    }, POLL);
    const convs = Array.from({ length: 6 }, (_, k) => conversation(`s${k}`));
    // Each new session's first request reaches all three replicas at once, each in its own order.
    const firsts = await Promise.all(
      rs.flatMap((r, i) =>
        [...convs.slice(i * 2), ...convs.slice(0, i * 2)].map(async (c) => {
          const copy: Conversation = { ...c, messages: [...c.messages], workers: [] };
          const headers = { 'x-session-id': c.id };
          return [c.id, await sendTurn(client(r), copy, { stream: i === 1, maxTokens: 4, headers })] as const;
        }),
      ),
    );
    for (const c of convs) {
      expect(new Set(firsts.filter(([id]) => id === c.id).map(([, w]) => w)), c.id).toHaveLength(1);
    }
    await converse(rs, convs, 3, true);
    oneEngineEach(convs);

    // Long streams through r2, one per session, read until their first token: in flight.
    const c2 = client(r2);
    const streams = await Promise.all(
      convs.map(async (c) => {
        const { data } = await c2.chat.completions
          .create(
            { model: 'sim-model', messages: c.messages, stream: true },
            { headers: { 'x-session-id': c.id } },
          )
          .withResponse();
        const it = data[Symbol.asyncIterator]();
        await it.next();
        return it;
      }),
    );
    const total = async (r: RouterProcess) => (await workers(r)).reduce((sum, w) => sum + w.load, 0);
    await vi.waitFor(async () => expect(await total(r0)).toBe(convs.length), POLL); // r2's load, seen by r0
    const cut = streams.map((it) =>
      (async () => {
        for (;;) if ((await it.next()).done) return;
      })().catch(() => {}),
    );
    // r2 dies while the survivors go on serving every session, each on its engine.
    const serving = converse([r0, r1], convs, 2, true);
    process.kill(-(r2.child.pid as number), 'SIGKILL');
    await Promise.all([serving, r2.exited, ...cut]);
    oneEngineEach(convs);
    // No load left behind: r2's expires with it.
    for (const r of [r0, r1]) await vi.waitFor(async () => expect(await total(r)).toBe(0), POLL);
  });
});

describe('the store password', () => {
  it('is refused on the command line, in the URL or as a flag, without being echoed', async () => {
    const inUrl = await runToExit(process.execPath, [
      ENTRY,
      '--state-store',
      'redis://:hunter2-in-url@127.0.0.1:6379/0',
    ]);
    expect(inUrl.code).toBe(2);
    expect(inUrl.output).toContain('--state-store');
    expect(inUrl.output).toContain('VLLM_ROUTER_STATE_STORE_PASSWORD');
    expect(inUrl.output).not.toContain('hunter2');
    const flag = await runToExit(process.execPath, [
      ENTRY,
      '--state-store',
      REDIS_URL,
      '--state-store-password',
      'hunter2-flag',
    ]);
    expect(flag.code).toBe(2);
    expect(flag.output).toContain('VLLM_ROUTER_STATE_STORE_PASSWORD');
    expect(flag.output).not.toContain('hunter2');
  });

  it('from the environment never shows in the output, /health or /metrics', async () => {
    engines = await startEngines(1, { tokens: 2, ttftMs: 1, itlMs: 1 });
    const env = { VLLM_ROUTER_STATE_STORE_PASSWORD: 'hunter2-env' };
    const checked = await runToExit(process.execPath, [ENTRY, '--state-store', REDIS_URL, '--check-config'], {
      env,
    });
    expect(checked.code).toBe(0);
    expect(checked.output).not.toContain('hunter2');
    // This Redis's default user takes any password: the router connects with it.
    const r = (await replicas(1, ['--log-level', 'debug'], env))[0] as RouterProcess;
    await sendTurn(client(r), conversation('pw'), { stream: true });
    const health = await (await fetch(`${r.url}/health`)).text();
    expect(JSON.parse(health).state_store).toMatchObject({ url: REDIS_URL, connected: true });
    const metrics = await (await fetch(`${r.url}/metrics`)).text();
    expect(metrics).toContain('vllm_router_state_store_up 1');
    for (const text of [health, metrics, r.output()]) expect(text).not.toContain('hunter2');
  });

  it('--state-store is refused where the runtime cannot share through it (Workers)', () => {
    const config = parseRouterConfig({ stateStore: { url: REDIS_URL } });
    const host = {
      upstream: { fetch: () => Promise.reject(new Error('unused')) } as never,
      logSink: () => {},
    };
    expect(() => createRouterOn(config, host, {} as never)).toThrow(/--state-store.*Node and Deno/);
  });
});
