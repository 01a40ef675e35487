/**
 * Prefill/decode disaggregation on Deno: the same core, run by the `deno` binary as a process, in
 * front of real simulated engines (NIXL and Mooncake), and P2P-NCCL engines registering over ZMQ
 * (the zeromq addon, which needs FFI and read permissions the other modes do not).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startSimEngine } from '../../../src/sim/node.ts';
import { startZmqEngine, type ZmqEngine } from '../../support/zmq-engine.ts';
import { REPO_ROOT, runToExit, spawnRouter } from '../router-process.ts';

const DENO = join(REPO_ROOT, 'node_modules/deno/deno');
const ENTRY = join(REPO_ROOT, 'src/adapters/deno/main.ts');
const PERMISSIONS = ['--allow-net', '--allow-env', '--allow-read'];
/** What the startup error asks for with --vllm-discovery-address. */
const P2P_PERMISSIONS = '--allow-ffi=node_modules/zeromq --allow-read=.,/etc/alpine-release';
const denoDir = mkdtempSync(join(tmpdir(), 'vllm-edge-router-deno-pd-'));
const env = { DENO_DIR: denoDir, DENO_NO_UPDATE_CHECK: '1' };
const serveFlags = ['--port', '0', '--prometheus-port', '0', '--shutdown-drain-delay-secs', '0'];

afterAll(() => rmSync(denoDir, { recursive: true, force: true }));

const chat = {
  model: 'sim-model',
  messages: [{ role: 'user', content: 'hello' }],
  max_tokens: 3,
  stream: true,
};

describe.concurrent('prefill/decode on Deno', () => {
  it.each([
    ['nixl', []],
    ['mooncake', ['--kv-connector', 'mooncake']],
  ])('%s: a prefill leg, then the decode streams the answer', async (connector, flags) => {
    const prefill = await startSimEngine({ id: `p-${connector}`, host: '127.0.0.1', port: 0 });
    const decode = await startSimEngine({ id: `d-${connector}`, host: '127.0.0.1', port: 0 });
    const port = new URL(prefill.url).port;
    const args = [...serveFlags, '--vllm-pd-disaggregation', ...flags];
    const router = await spawnRouter(
      DENO,
      ['run', ...PERMISSIONS, ENTRY, ...args, '--prefill', prefill.url, port, '--decode', decode.url],
      { env },
    );
    try {
      const res = await fetch(`${router.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(chat),
      });
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('[DONE]');
      const [p] = prefill.engine.log;
      const [d] = decode.engine.log;
      expect(p?.body).toMatchObject({
        max_tokens: 1,
        stream: false,
        kv_transfer_params: { do_remote_decode: true },
      });
      expect(d?.body).toMatchObject({
        max_tokens: 3,
        stream: true,
        kv_transfer_params: { do_remote_prefill: true },
      });
      expect(d?.headers['x-request-id']).toBe(p?.headers['x-request-id']);
      expect(res.headers.get('x-routed-worker-id')).toBe(decode.url);
    } finally {
      await router.stop();
      await Promise.all([prefill.close(), decode.close()]);
    }
  });

  it('P2P-NCCL without --allow-ffi exits 2 with one line naming the flag and the permissions', async () => {
    const { code, output } = await runToExit(
      DENO,
      ['run', ...PERMISSIONS, ENTRY, '--vllm-pd-disaggregation', '--vllm-discovery-address', '127.0.0.1:0'],
      { env },
    );
    expect(code).toBe(2);
    const lines = output.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^error: --vllm-discovery-address 127\.0\.0\.1:0: .*ffi access to node_modules\/zeromq/,
    );
    expect(lines[0]).toContain(`run with ${P2P_PERMISSIONS}`);
  });

  it('P2P-NCCL with the permissions: engines register over ZMQ, a chat request names both ZMQ addresses', async () => {
    const denoFlags = ['--allow-net', '--allow-env', ...P2P_PERMISSIONS.split(' ')];
    const args = [...serveFlags, '--vllm-pd-disaggregation', '--vllm-discovery-address', '127.0.0.1:0'];
    const router = await spawnRouter(DENO, ['run', ...denoFlags, ENTRY, ...args], { env, ready: false });
    const engines: ZmqEngine[] = [];
    try {
      const discovery = /listening on .* p2p_discovery=(127\.0\.0\.1:\d+)/.exec(router.output())?.[1];
      expect(discovery).toBeDefined();
      const start = (type: 'P' | 'D') =>
        startZmqEngine({
          discovery: discovery as string,
          type,
          intervalMs: 500,
          engine: { id: `deno-${type}`, tokens: 3, ttftMs: 1, itlMs: 1 },
        });
      const [p, d] = await Promise.all([start('P'), start('D')]);
      engines.push(p, d);
      await until(async () => {
        const res = await fetch(`${router.url}/workers`);
        const { workers } = (await res.json()) as {
          workers: { url: string; role: string; healthy: boolean }[];
        };
        const healthy = (url: string, role: string) =>
          workers.some((w) => w.url === url && w.role === role && w.healthy);
        return healthy(p.sim.url, 'prefill') && healthy(d.sim.url, 'decode');
      });
      const res = await fetch(`${router.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(chat),
      });
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('[DONE]');
      const [pl] = p.sim.engine.log;
      const [dl] = d.sim.engine.log;
      const esc = (s: string) => s.replace(/\./g, '\\.');
      const pz = esc(p.registration.zmqAddress);
      const dz = esc(d.registration.zmqAddress);
      const id = pl?.headers['x-request-id'];
      expect(id).toMatch(new RegExp(`^___prefill_addr_${pz}___decode_addr_${dz}_[0-9a-f]{32}$`));
      expect(dl?.headers['x-request-id']).toBe(id);
      expect(pl?.body).toMatchObject({ max_tokens: 1, stream: false });
      expect(dl?.body).toMatchObject({ max_tokens: 3, stream: true });
      expect(res.headers.get('x-routed-worker-id')).toBe(d.sim.url);
      // The registration socket closes with the listeners: the drain ends and the router exits 0.
      router.child.kill('SIGTERM');
      expect(await router.exited).toBe(0);
    } finally {
      await router.stop();
      await Promise.all(engines.map((e) => e.close()));
    }
  });
});

/** Polls `check` until it holds (a condition, not a timed wait). */
async function until(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
