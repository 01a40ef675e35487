/**
 * The runtime scenarios through the Deno adapter, run by the `deno` binary from node_modules as a
 * real process (DENO_DIR in a temp folder, so nothing is written to the home directory); then
 * `deno task start` as a user types it, and `.env` read from the working directory.
 */
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startSimEngine } from '../../../src/sim/node.ts';
import { chatRequest, REPO_ROOT, runToExit, spawnRouter } from '../router-process.ts';
import { CUT_FLAGS, describeRuntime, describeShutdownCut, SCENARIO_FLAGS } from '../scenarios.ts';

const DENO = join(REPO_ROOT, 'node_modules/deno/deno');
const ENTRY = join(REPO_ROOT, 'src/adapters/deno/main.ts');
const PERMISSIONS = ['--allow-net', '--allow-env', '--allow-read'];
const denoDir = mkdtempSync(join(tmpdir(), 'vllm-edge-router-deno-'));
const env = { DENO_DIR: denoDir, DENO_NO_UPDATE_CHECK: '1' };
const serveFlags = ['--port', '0', '--prometheus-port', '0'];

afterAll(() => rmSync(denoDir, { recursive: true, force: true }));

describeRuntime('the Deno adapter as a process', (workerUrls) =>
  spawnRouter(
    DENO,
    ['run', ...PERMISSIONS, ENTRY, ...serveFlags, ...SCENARIO_FLAGS, '--worker-urls', ...workerUrls],
    { env },
  ),
);

describeShutdownCut('the Deno adapter at the end of the grace period', (workerUrls) =>
  spawnRouter(
    DENO,
    ['run', ...PERMISSIONS, ENTRY, ...serveFlags, ...CUT_FLAGS, '--worker-urls', ...workerUrls],
    {
      env,
    },
  ),
);

describe('the engine transport', () => {
  it.each([
    ['undici', {}],
    ['fetch', { VLLM_EDGE_ROUTER_TRANSPORT: 'fetch' }],
  ] as const)('%s: named in the listening line, and it serves a request', async (transport, extra) => {
    const engine = await startSimEngine({ id: 'transport-engine', host: '127.0.0.1', port: 0 });
    const router = await spawnRouter(
      DENO,
      ['run', ...PERMISSIONS, ENTRY, ...serveFlags, '--worker-urls', engine.url],
      { env: { ...env, ...extra } },
    );
    try {
      expect(router.output()).toContain(`transport=${transport} `);
      const res = await chatRequest(router.url);
      expect(res.status).toBe(200);
      expect((await res.json()).choices).toHaveLength(1);
    } finally {
      await router.stop();
      await engine.close();
    }
  });
});

describe('deno task start', () => {
  it('takes the router flags after --, routes with deno.json settings, drains on SIGTERM (forwarded)', async () => {
    const engine = await startSimEngine({ id: 'task-engine', host: '127.0.0.1', port: 0 });
    const router = await spawnRouter(
      DENO,
      ['task', 'start', '--', ...serveFlags, '--shutdown-drain-delay-secs', '0', '--worker-urls', engine.url],
      { env },
    );
    try {
      const res = await chatRequest(router.url);
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

describe('starting on Deno', () => {
  it('deno task start with no workers: no simulated engines, an empty fleet, readiness 503 and a warning', async () => {
    const router = await spawnRouter(
      DENO,
      ['task', 'start', '--', ...serveFlags, '--shutdown-drain-delay-secs', '0'],
      {
        env,
        ready: false,
      },
    );
    try {
      const res = await fetch(`${router.url}/readiness`);
      expect(res.status).toBe(503);
      expect(await res.json()).toMatchObject({ reason: 'no_available_workers', total_workers: 0 });
      expect(router.output()).toMatch(/WARN +no workers configured/);
      expect(router.output()).not.toContain('started two simulated');
    } finally {
      await router.stop();
    }
  });

  it('listens before the worker is healthy (readiness 503), then turns ready', async () => {
    const engine = await startSimEngine({ id: 'late-engine', host: '127.0.0.1', port: 0, unhealthy: true });
    const router = await spawnRouter(
      DENO,
      [
        'run',
        ...PERMISSIONS,
        ENTRY,
        ...serveFlags,
        '--shutdown-drain-delay-secs',
        '0',
        '--worker-startup-check-interval',
        '0.1',
        '--worker-urls',
        engine.url,
      ],
      { env, ready: false },
    );
    try {
      expect((await fetch(`${router.url}/readiness`)).status).toBe(503);
      await expect
        .poll(() => router.output(), { timeout: 5000 })
        .toMatch(
          new RegExp(`health probe failed .*probe_url=${engine.url}/health kind=http_status status=503`),
        );
      engine.engine.configure({ unhealthy: false });
      await expect
        .poll(async () => (await fetch(`${router.url}/readiness`)).status, { timeout: 5000 })
        .toBe(200);
    } finally {
      await router.stop();
      await engine.close();
    }
  });

  it('a port in use: one line naming the flag, exit 2', async () => {
    const blocker = createServer();
    blocker.listen(0, '127.0.0.1');
    await once(blocker, 'listening');
    const { port } = blocker.address() as { port: number };
    try {
      for (const flag of ['--port', '--prometheus-port']) {
        const flags = { '--port': '0', '--prometheus-port': '0', [flag]: String(port) };
        const { code, output } = await runToExit(
          DENO,
          ['run', ...PERMISSIONS, ENTRY, ...Object.entries(flags).flat()],
          {
            env,
          },
        );
        expect(code).toBe(2);
        expect(output).toBe(`error: ${flag} ${port}: address 127.0.0.1:${port} is already in use\n`);
      }
    } finally {
      blocker.close();
    }
  });
});
