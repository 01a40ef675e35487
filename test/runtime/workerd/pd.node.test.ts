/**
 * Prefill/decode disaggregation on Cloudflare Workers (workerd through Miniflare, the fleet in the
 * Durable Object): the isolate runs the prefill leg, then the decode leg, against real simulated
 * engines on loopback; the Durable Object holds both pools and their leases.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSimEngine, startSimEngine } from '../../../src/sim/node.ts';
import { type MiniflareWorker, startMiniflareWorker } from './miniflare-worker.ts';

let prefill: RunningSimEngine;
let decode: RunningSimEngine;
let worker: MiniflareWorker;
const ADMIN_KEY = 'pd-test-admin-key';

beforeAll(async () => {
  prefill = await startSimEngine({ id: 'sim-p', host: '127.0.0.1', port: 0, tokens: 4 });
  decode = await startSimEngine({ id: 'sim-d', host: '127.0.0.1', port: 0, tokens: 4 });
  worker = await startMiniflareWorker({
    adminKey: ADMIN_KEY,
    routerConfig: {
      pd: { enabled: true, prefill: [{ url: prefill.url }], decode: [decode.url] },
      log: { level: 'error' },
    },
  });
});

afterAll(async () => {
  await worker?.dispose();
  await Promise.all([prefill?.close(), decode?.close()]);
});

describe('prefill/decode on Workers', () => {
  it('a NIXL prefill leg, then the decode leg with its KV params; leases back to zero', async () => {
    const res = await fetch(`${worker.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim-model', messages: [{ role: 'user', content: 'hi' }], stream: true }),
    });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('[DONE]');
    const p = prefill.engine.log.at(-1);
    const d = decode.engine.log.at(-1);
    expect(p?.body).toMatchObject({
      max_tokens: 1,
      stream: false,
      kv_transfer_params: { do_remote_decode: true },
    });
    expect(d?.body).toMatchObject({ stream: true, kv_transfer_params: { remote_engine_id: 'sim-p-dp0' } });
    expect(d?.headers['x-request-id']).toBe(p?.headers['x-request-id']);
    const list = async () =>
      (
        (await (
          await fetch(`${worker.url}/workers`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } })
        ).json()) as { workers: { role: string; load: number }[] }
      ).workers;
    expect((await list()).map((w) => w.role).sort()).toEqual(['decode', 'prefill']);
    // The decode lease is settled when the stream ends (an RPC to the Durable Object): wait for it.
    await expect.poll(async () => (await list()).map((w) => w.load), { timeout: 5000 }).toEqual([0, 0]);
  });
});
