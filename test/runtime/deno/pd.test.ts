/**
 * Prefill/decode disaggregation on Deno: the same core, run by the `deno` binary as a process, in
 * front of real simulated engines (NIXL and Mooncake); P2P-NCCL registration is refused (it needs
 * a ZMQ socket, which the Node adapter has).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startSimEngine } from '../../../src/sim/node.ts';
import { REPO_ROOT, runToExit, spawnRouter } from '../router-process.ts';

const DENO = join(REPO_ROOT, 'node_modules/deno/deno');
const ENTRY = join(REPO_ROOT, 'src/adapters/deno/main.ts');
const PERMISSIONS = ['--allow-net', '--allow-env', '--allow-read'];
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

  it('P2P-NCCL registration exits 2 naming --vllm-discovery-address', async () => {
    const { code, output } = await runToExit(
      DENO,
      [
        'run',
        ...PERMISSIONS,
        ENTRY,
        '--vllm-pd-disaggregation',
        '--vllm-discovery-address',
        '127.0.0.1:30001',
      ],
      { env },
    );
    expect(code).toBe(2);
    expect(output).toContain('--vllm-discovery-address');
  });
});
