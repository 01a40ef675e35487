/**
 * The runtime scenarios through the Deno adapter, run by the `deno` binary from node_modules as a
 * real process (DENO_DIR in a temp folder, so nothing is written to the home directory); then
 * `deno task start` as a user types it, and `.env` read from the working directory.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startSimEngine } from '../../../src/sim/node.ts';
import { REPO_ROOT, runToExit, spawnRouter } from '../router-process.ts';
import { describeRuntime } from '../scenarios.ts';

const DENO = join(REPO_ROOT, 'node_modules/deno/deno');
const ENTRY = join(REPO_ROOT, 'src/adapters/deno/main.ts');
const PERMISSIONS = ['--allow-net', '--allow-env', '--allow-read'];
const denoDir = mkdtempSync(join(tmpdir(), 'vllm-edge-router-deno-'));
const env = { DENO_DIR: denoDir, DENO_NO_UPDATE_CHECK: '1' };
const serveFlags = ['--port', '0', '--prometheus-port', '0'];

afterAll(() => rmSync(denoDir, { recursive: true, force: true }));

describeRuntime('the Deno adapter as a process', (workerUrls) =>
  spawnRouter(DENO, ['run', ...PERMISSIONS, ENTRY, ...serveFlags, '--worker-urls', ...workerUrls], { env }),
);

describe('deno task start', () => {
  it('takes the router flags after --, routes with deno.json settings, drains on SIGTERM (forwarded)', async () => {
    const engine = await startSimEngine({ id: 'task-engine', host: '127.0.0.1', port: 0 });
    const router = await spawnRouter(
      DENO,
      ['task', 'start', '--', ...serveFlags, '--worker-urls', engine.url],
      { env },
    );
    try {
      const res = await fetch(`${router.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'sim-model',
          messages: [{ role: 'user', content: 'hi' }],
          max_tokens: 2,
        }),
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-routed-worker-id')).toBe(engine.url);
      await res.arrayBuffer();
      router.child.kill('SIGTERM');
      expect(await router.exited).toBe(0);
      // deno.json's "unstable": ["no-legacy-abort"] is in effect: a finished response did not abort
      // request.signal (Deno warns when it does).
      expect(router.output()).not.toContain('legacy');
    } finally {
      await router.stop();
      await engine.close();
    }
  });
});

describe('configuration on Deno', () => {
  it('reads .env from the working directory; the environment and flags win over it', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'vllm-edge-router-dotenv-'));
    try {
      writeFileSync(
        join(cwd, '.env'),
        'VLLM_ROUTER_WORKER_URLS=http://127.0.0.1:8001,http://127.0.0.1:8002\nVLLM_ROUTER_POLICY=random\n',
      );
      const { code, output } = await runToExit(
        DENO,
        ['run', ...PERMISSIONS, ENTRY, '--policy', 'round_robin', '--check-config'],
        { cwd, env: { ...env, VLLM_ROUTER_RETRY_MAX_RETRIES: '7' } },
      );
      expect(code).toBe(0);
      const config = JSON.parse(output);
      expect(config.workers.urls).toEqual(['http://127.0.0.1:8001', 'http://127.0.0.1:8002']);
      expect(config.policy.name).toBe('round_robin');
      expect(config.retry.maxRetries).toBe(7);
    } finally {
      rmSync(cwd, { recursive: true, force: true });
    }
  });

  it('exits 2 naming an unknown flag, like npm start', async () => {
    const { code, output } = await runToExit(DENO, ['run', ...PERMISSIONS, ENTRY, '--wroker-urls', 'x'], {
      env,
    });
    expect(code).toBe(2);
    expect(output).toContain('unknown flag --wroker-urls (did you mean --worker-urls?)');
  });
});
