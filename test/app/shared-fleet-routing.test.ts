/**
 * Whole router replicas (createReplicaRouter from a command line) sharing one fleet through the
 * real Redis, in process: the official SDK talks to each replica's app, simulated engines answer.
 * cache_aware keeps a conversation whose turns alternate between replicas on one engine (two
 * routers on local state do not), and a store that goes away never fails a request: the replicas
 * route on local state, say so on /health and in the metrics, and resynchronise when it is back.
 */
import type OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { deadPort } from '../support/net.ts';
import { REDIS_HOST, REDIS_PORT, REDIS_URL, useRedis } from '../support/redis.ts';
import {
  type AppReplica,
  appReplica,
  type Conversation,
  conversation,
  eventually,
  sdkFor,
  sendTurn,
  simEngines,
} from '../support/replicas.ts';
import { type TcpProxy, tcpProxy } from '../support/tcp-proxy.ts';

const HOSTS = ['a.test', 'b.test', 'c.test'];
const CMD = `--worker-urls ${HOSTS.map((h) => `http://${h}`).join(' ')}`;

const redis = useRedis();
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

async function replica(command: string, engines: ReturnType<typeof simEngines>, url?: string) {
  const store = url === undefined ? undefined : await redis.store({ url });
  const r = await appReplica(command, engines, store);
  closers.push(() => r.close());
  return r;
}

async function proxy(): Promise<TcpProxy> {
  const p = await tcpProxy({ host: REDIS_HOST, port: REDIS_PORT });
  closers.push(() => p.close());
  return p;
}

/** How many `type` events from other replicas `r` has applied. */
const received = (r: AppReplica, type: string) =>
  r.metric('vllm_router_state_store_events_received_total', `type="${type}"`);

/**
 * Six conversations of four turns, every turn of all six at once, turn t of conversation k through
 * replica (k + t) mod 2, streaming on odd turns. Between turns the replicas write what they did and,
 * sharing a store, each waits until it has applied every placement the other made.
 */
async function converse(pair: [AppReplica, AppReplica]): Promise<Conversation[]> {
  const clients = pair.map(sdkFor);
  const convs = Array.from({ length: 6 }, (_, k) => conversation(`k${k}`));
  for (let turn = 0; turn < 4; turn++) {
    const before = await Promise.all(pair.map((r) => received(r, 'prefix')));
    const routedBy = [0, 0];
    await Promise.all(
      convs.map((conv, k) => {
        const via = (k + turn) % 2;
        routedBy[via] = (routedBy[via] ?? 0) + 1;
        const question = turn === 0 ? undefined : `And what about line ${turn} of report ${conv.id}?`;
        return sendTurn(clients[via] as OpenAI, conv, { question, stream: turn % 2 === 1 });
      }),
    );
    if (!pair[0].shared) continue;
    await Promise.all(pair.map((r) => r.settle()));
    await eventually(async () => {
      const now = await Promise.all(pair.map((r) => received(r, 'prefix')));
      expect(now.map((n, i) => n - (before[i] ?? 0))).toEqual([...routedBy].reverse());
    });
  }
  return convs;
}

describe('cache_aware across replicas', () => {
  it('keeps each conversation on one engine whichever replica its turns go through', async () => {
    const engines = simEngines(HOSTS);
    const local = await converse([await replica(CMD, engines), await replica(CMD, engines)]);
    const split = local.filter((c) => new Set(c.workers).size > 1);
    expect(split.length, 'on local state alone, some conversations change engine').toBeGreaterThan(0);

    const shared: [AppReplica, AppReplica] = [
      await replica(CMD, simEngines(HOSTS), REDIS_URL),
      await replica(CMD, simEngines(HOSTS), REDIS_URL),
    ];
    const convs = await converse(shared);
    for (const c of convs)
      expect(new Set(c.workers), `conversation ${c.id}: ${c.workers.join(' ')}`).toHaveLength(1);
    expect(new Set(convs.map((c) => c.workers[0])).size, 'spread over the engines').toBeGreaterThan(1);
  });
});

type Health = { state_store: { connected: boolean; fallbacks: number; url: string } };

describe('the store down', () => {
  it('pointed at a closed port: requests route on local state, /health and the metrics say so', async () => {
    const engines = simEngines(HOSTS);
    const r = await replica(CMD, engines, `redis://127.0.0.1:${await deadPort()}/0`);
    const client = sdkFor(r);
    const convs = Array.from({ length: 4 }, (_, k) => conversation(`d${k}`));
    await Promise.all(convs.map((c, k) => sendTurn(client, c, { stream: k % 2 === 0 })));
    await r.settle();
    const health = await r.json<Health>('/health');
    expect(health.state_store).toMatchObject({ connected: false });
    expect(health.state_store.fallbacks).toBeGreaterThan(0);
    expect(await r.metric('vllm_router_state_store_up')).toBe(0);
    expect(await r.metric('vllm_router_state_store_fallbacks_total')).toBeGreaterThan(0);
    expect(r.logs.filter((l) => l.includes('state store unavailable'))).toHaveLength(1);
  });

  it('cut off mid-run: requests keep routing, and admin changes made meanwhile reach the other replica once it is back', async () => {
    const p = await proxy();
    const url = `redis://127.0.0.1:${p.port}/0`;
    const engines = simEngines([...HOSTS, 'd.test']);
    const [a, b] = [await replica(CMD, engines, url), await replica(CMD, engines, url)];
    const clients = [sdkFor(a), sdkFor(b)];
    const run = (tag: string) =>
      Promise.all(
        Array.from({ length: 6 }, (_, k) =>
          sendTurn(clients[k % 2] as OpenAI, conversation(`${tag}${k}`), { stream: k % 3 === 0 }),
        ),
      );
    await run('before');
    expect((await a.json<Health>('/health')).state_store.connected).toBe(true);

    p.refuse(true);
    await eventually(async () => {
      await Promise.all([a.settle(), b.settle()]);
      for (const r of [a, b]) expect((await r.json<Health>('/health')).state_store.connected).toBe(false);
    });
    await run('during'); // every turn answered: sendTurn throws on any failure
    const added = await a.request('/workers', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ url: 'http://d.test' }),
    });
    expect(added.status).toBe(201);
    const changed = await b.request('/workers/http%3A%2F%2Fa.test', {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ priority: 7 }),
    });
    expect(changed.status).toBe(200);
    await Promise.all([a.settle(), b.settle()]);
    expect(await a.metric('vllm_router_state_store_fallbacks_total')).toBeGreaterThan(0);
    expect(await a.metric('vllm_router_state_store_up')).toBe(0);

    p.refuse(false);
    const worker = async (r: AppReplica, id: string) =>
      (await r.json<{ workers: { id: string; priority?: number }[] }>('/workers')).workers.find(
        (w) => w.id === id,
      );
    await eventually(async () => {
      await Promise.all([a.settle(), b.settle()]);
      expect(await worker(b, 'http://d.test')).toBeDefined();
      expect((await worker(a, 'http://a.test'))?.priority).toBe(7);
      for (const r of [a, b]) expect((await r.json<Health>('/health')).state_store.connected).toBe(true);
    });
    await run('after');
    // One warning for the whole outage (many calls failed, the subscription too), one recovery.
    for (const r of [a, b]) {
      expect(r.logs.filter((l) => l.includes('state store unavailable'))).toHaveLength(1);
      expect(r.logs.filter((l) => l.includes('state store reachable again'))).toHaveLength(1);
    }
  });
});
