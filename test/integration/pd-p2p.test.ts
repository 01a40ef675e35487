/**
 * P2P-NCCL over loopback: a real router with --vllm-discovery-address and simulated engines that
 * register over real ZMQ (DEALER → the router's ROUTER socket, msgpack), as vLLM's P2pNcclConnector does.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Router as ZmqRouter } from 'zeromq';
import { type NodeRouter, startNodeRouter } from '../../src/adapters/node/server.ts';
import type { SimLogEntry } from '../../src/sim/types.ts';
import { testConfig } from '../support/harness.ts';
import { startZmqEngine, type ZmqEngine } from '../support/zmq-engine.ts';

const PD = { pd: { enabled: true, discoveryAddress: '127.0.0.1:0' } };

/** Polls `check` until it holds (a condition, not a timed wait). */
async function until(check: () => Promise<boolean> | boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

interface WorkerView {
  url: string;
  role: string;
  healthy: boolean;
}

const reEscape = (s: string) => s.replace(/[.[\]]/g, '\\$&');

describe('P2P-NCCL workers registering over ZMQ', () => {
  let router: NodeRouter;
  let prefill: ZmqEngine[];
  let decode: ZmqEngine[];
  let client: OpenAI;
  const workers = async () =>
    ((await (await fetch(`${router.url}/workers`)).json()) as { workers: WorkerView[] }).workers;

  beforeAll(async () => {
    router = await startNodeRouter(testConfig([], PD), {
      logSink: () => {},
      metricsListener: false,
      p2p: { expiryMs: 600, sweepMs: 50 },
    });
    const discovery = router.p2pAddress as string;
    const start = (type: 'P' | 'D', i: number) =>
      startZmqEngine({
        discovery,
        type,
        intervalMs: 100,
        engine: { id: `${type}${i}`, tokens: 4, ttftMs: 1, itlMs: 1 },
      });
    [prefill, decode] = await Promise.all([
      Promise.all([start('P', 0), start('P', 1)]),
      Promise.all([start('D', 0), start('D', 1)]),
    ]);
    await until(async () => (await workers()).filter((w) => w.healthy).length === 4);
    client = new OpenAI({ baseURL: `${router.url}/v1`, apiKey: 'sk-test', maxRetries: 0 });
  });
  afterAll(async () => {
    await router?.close(0);
    await Promise.all([...(prefill ?? []), ...(decode ?? [])].map((e) => e.close()));
  });
  beforeEach(() => {
    for (const e of [...prefill, ...decode]) e.sim.engine.reset();
  });

  it('the registered engines appear in GET /workers with their roles', async () => {
    const roles = new Map((await workers()).map((w) => [w.url, w.role]));
    for (const e of prefill) expect(roles.get(e.sim.url)).toBe('prefill');
    for (const e of decode) expect(roles.get(e.sim.url)).toBe('decode');
    expect(router.p2pAddress).toMatch(/^127\.0\.0\.1:\d+$/);
  });

  /** The one prefill leg and the one decode leg of the last request, and who got them. */
  function legs(): { p: SimLogEntry; d: SimLogEntry; pe: ZmqEngine; de: ZmqEngine } {
    const got = (pool: ZmqEngine[]) => pool.filter((e) => e.sim.engine.log.length > 0);
    const [pe, ...morePrefill] = got(prefill);
    const [de, ...moreDecode] = got(decode);
    expect(morePrefill).toEqual([]);
    expect(moreDecode).toEqual([]);
    if (!pe || !de) throw new Error('a leg is missing');
    expect(pe.sim.engine.log).toHaveLength(1);
    expect(de.sim.engine.log).toHaveLength(1);
    return { p: pe.sim.engine.log[0] as SimLogEntry, d: de.sim.engine.log[0] as SimLogEntry, pe, de };
  }

  function expectP2pLegs(stream: boolean) {
    const { p, d, pe, de } = legs();
    const id = p.headers['x-request-id'];
    const pz = reEscape(pe.registration.zmqAddress);
    const dz = reEscape(de.registration.zmqAddress);
    expect(id).toMatch(new RegExp(`^___prefill_addr_${pz}___decode_addr_${dz}_[0-9a-f]{32}$`));
    expect(d.headers['x-request-id']).toBe(id);
    expect(p.path).toBe('/v1/chat/completions');
    expect(p.body).toMatchObject({ max_tokens: 1, stream: false });
    expect(p.body).not.toHaveProperty('kv_transfer_params');
    expect(d.body).not.toHaveProperty('kv_transfer_params');
    expect((d.body as { stream?: boolean }).stream ?? false).toBe(stream);
    expect(d.tMs).toBeGreaterThanOrEqual(p.tEndMs as number);
  }

  it('a chat request goes to one prefill, then one decode, both legs naming their ZMQ addresses', async () => {
    const completion = await client.chat.completions.create({
      model: 'sim-model',
      messages: [{ role: 'user', content: 'Say hello' }],
      max_tokens: 3,
    });
    expect(completion.choices[0]?.message.content?.length).toBeGreaterThan(0);
    expectP2pLegs(false);
  });

  it('a streamed chat request takes the same two legs', async () => {
    const stream = await client.chat.completions.create({
      model: 'sim-model',
      messages: [{ role: 'user', content: 'Say hello' }],
      stream: true,
    });
    let content = '';
    for await (const chunk of stream) content += chunk.choices[0]?.delta.content ?? '';
    expect(content.length).toBeGreaterThan(0);
    expectP2pLegs(true);
  });

  it('a malformed message does not stop the socket; a silent engine expires', async () => {
    const gone = decode[1] as ZmqEngine;
    await gone.registration.send(new Uint8Array([0xc1]));
    const count = async (result: string) => {
      const line = (await router.metrics.render())
        .split('\n')
        .find((l) => l.startsWith(`vllm_router_pd_registrations_total{result="${result}"}`));
      return Number(line?.split(' ').pop() ?? 0);
    };
    await until(async () => (await count('invalid')) >= 1);
    const refreshes = await count('refresh');
    await until(async () => (await count('refresh')) > refreshes);
    gone.registration.stop();
    await until(async () => !(await workers()).some((w) => w.url === gone.sim.url));
    expect((await workers()).map((w) => w.url).sort()).toEqual(
      [prefill[0], prefill[1], decode[0]].map((e) => e?.sim.url).sort(),
    );
    expect(await router.metrics.render()).toContain('vllm_router_pd_registered_workers{role="decode"} 1');
  });
});

describe('--vllm-discovery-address bind failure', () => {
  it('is a startup error naming the flag', async () => {
    const taken = new ZmqRouter();
    await taken.bind('tcp://127.0.0.1:0');
    const address = (taken.lastEndpoint as string).replace('tcp://', '');
    try {
      const config = testConfig([], { pd: { enabled: true, discoveryAddress: address } });
      await expect(startNodeRouter(config, { logSink: () => {}, metricsListener: false })).rejects.toThrow(
        `--vllm-discovery-address ${address}: address already in use`,
      );
    } finally {
      taken.close();
    }
  });
});
