/**
 * The Node command as a real process, from the bundle (dist/node/main.js, rebuilt when src/
 * changed): exit codes of the CLI, a port in use (one line, exit 2), no demo engines unless
 * --demo, listening before any worker is healthy, the container's entrypoint (listen addresses
 * from the environment only), and SIGTERM draining a stream that is in flight.
 */
import { once } from 'node:events';
import { createServer } from 'node:net';
import OpenAI from 'openai';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { dockerfileEnv, dockerfileRuntime, dockerRunArgv } from '../runtime/dockerfile.ts';
import { builtEntry, type RouterProcess, runToExit, spawnRouter } from '../runtime/router-process.ts';
import { type RunningEngine, startEngines } from '../support/harness.ts';

let ENTRY: string;
beforeAll(async () => {
  ENTRY = await builtEntry();
});

const run = async (args: string[], env: Record<string, string> = {}) => {
  const { code, output } = await runToExit(process.execPath, [ENTRY, ...args], { env });
  return { code, output };
};
const start = (args: string[], options: { env?: Record<string, string>; ready?: boolean } = {}) =>
  spawnRouter(process.execPath, [ENTRY, ...args], options);

/** Ephemeral ports; no drain delay, so stopping a router after a test is quick. */
const EPHEMERAL = ['--port', '0', '--prometheus-port', '0', '--shutdown-drain-delay-secs', '0'];

let engines: RunningEngine[] = [];
let routers: RouterProcess[] = [];
afterEach(async () => {
  await Promise.all(routers.map((r) => r.stop()));
  await Promise.all(engines.map((e) => e.close()));
  engines = [];
  routers = [];
});

async function readiness(url: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${url}/readiness`);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe.concurrent('the vllm-edge-router command', () => {
  it('exits 2 naming an unknown flag and its nearest known flag', async () => {
    const { code, output } = await run(['--wroker-urls', 'http://127.0.0.1:1']);
    expect(code).toBe(2);
    expect(output).toContain('--wroker-urls');
    expect(output).toContain('--worker-urls');
  });

  it('exits 2 naming the flag and the allowed range for a bad value', async () => {
    const { code, output } = await run(['--retry-jitter-factor', '1.5']);
    expect(code).toBe(2);
    expect(output).toMatch(/--retry-jitter-factor.*between 0 and 1/);
  });

  it('prints the resolved configuration with --check-config and exits 0', async () => {
    const { code, output } = await run([
      '--service-discovery',
      'static',
      '--static-backends',
      'http://127.0.0.1:8001,http://127.0.0.1:8002',
      '--routing-logic',
      'roundrobin',
      '--check-config',
    ]);
    expect(code).toBe(0);
    const config = JSON.parse(output);
    expect(config.workers.urls).toEqual(['http://127.0.0.1:8001', 'http://127.0.0.1:8002']);
    expect(config.policy.name).toBe('round_robin');
  });

  it('prints the grouped flags with --help', async () => {
    const { code, output } = await run(['--help']);
    expect(code).toBe(0);
    expect(output).toContain('--worker-urls');
    expect(output).toContain('--retry-max-retries');
  });
});

describe.concurrent('a port in use', () => {
  it.each([['--port'], ['--prometheus-port'], ['--health-check-port']])(
    '%s: one line naming the flag, exit 2, no stack trace',
    async (flag) => {
      const blocker = createServer();
      blocker.listen(0, '127.0.0.1');
      await once(blocker, 'listening');
      const { port } = blocker.address() as { port: number };
      try {
        const flags = { '--port': '0', '--prometheus-port': '0', [flag]: String(port) };
        const { code, output } = await run([
          ...Object.entries(flags).flat(),
          '--worker-urls',
          'http://127.0.0.1:9',
        ]);
        expect(code).toBe(2);
        expect(output).toBe(`error: ${flag} ${port}: address 127.0.0.1:${port} is already in use\n`);
      } finally {
        blocker.close();
      }
    },
  );
});

describe('starting', () => {
  it('with no workers and no --demo: an empty fleet, readiness 503, a warning; a worker added over the admin API makes it ready', async () => {
    const router = await start(EPHEMERAL, { ready: false });
    routers.push(router);
    expect(await readiness(router.url)).toEqual({
      status: 503,
      body: { status: 'not_ready', reason: 'no_available_workers', healthy_workers: 0, total_workers: 0 },
    });
    expect(router.output()).toMatch(
      /WARN +no workers configured: .*add one with POST \/workers or \/add_worker/,
    );
    expect(router.output()).not.toContain('started two simulated');
    engines = await startEngines(1);
    const added = await fetch(`${router.url}/workers`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ url: engines[0]!.url }),
    });
    expect(added.status).toBe(201);
    await expect.poll(async () => (await readiness(router.url)).status, { timeout: 5000 }).toBe(200);
  });

  it('the installed bin starts no simulated engines either', async () => {
    const router = await spawnRouter(process.execPath, ['bin/vllm-edge-router.mjs', ...EPHEMERAL], {
      ready: false,
    });
    routers.push(router);
    expect((await readiness(router.url)).body.reason).toBe('no_available_workers');
    expect(router.output()).toContain('no workers configured');
    expect(router.output()).not.toContain('started two simulated');
  });

  it('--demo (what npm start passes) routes to two simulated engines', async () => {
    const router = await start(['--demo', ...EPHEMERAL]);
    routers.push(router);
    expect(router.output()).toContain('started two simulated vLLM engines');
    const client = new OpenAI({ baseURL: `${router.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const answer = await client.chat.completions.create({
      model: 'sim-model',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 3,
    });
    expect(answer.choices[0]?.message.content?.length).toBeGreaterThan(0);
  });

  it('listens before a worker is healthy; the startup timeout is logged and the router keeps serving', async () => {
    engines = await startEngines(1, { unhealthy: true });
    const router = await start(
      [
        ...EPHEMERAL,
        '--worker-urls',
        engines[0]!.url,
        '--worker-startup-timeout-secs',
        '0.3',
        '--worker-startup-check-interval',
        '0.1',
        '--health-check-interval-secs',
        '0.2',
      ],
      { ready: false },
    );
    routers.push(router);
    expect((await readiness(router.url)).status).toBe(503);
    await expect
      .poll(() => router.output(), { timeout: 5000 })
      .toContain('no healthy worker within --worker-startup-timeout-secs (0.3 s): still serving');
    expect(router.output()).toMatch(
      new RegExp(
        `WARN +health probe failed worker=${engines[0]!.url} probe_url=${engines[0]!.url}/health kind=http_status status=503`,
      ),
    );
    expect((await fetch(`${router.url}/liveness`)).status).toBe(200);
    engines[0]!.engine.configure({ unhealthy: false });
    await expect.poll(async () => (await readiness(router.url)).status, { timeout: 5000 }).toBe(200);
    expect(router.child.exitCode).toBeNull();
  });
});

describe('the container entrypoint', () => {
  it('--check-config with the image environment: both listeners on 0.0.0.0, from the environment only', async () => {
    const argv = dockerRunArgv(dockerfileRuntime(), [
      '--worker-urls',
      'http://engine-1:8000',
      '--check-config',
    ]);
    const [program, ...args] = argv.slice(argv.indexOf('--') + 1);
    expect(program).toBe('node');
    const { code, output } = await runToExit(process.execPath, args, { env: dockerfileEnv() });
    expect(code).toBe(0);
    const config = JSON.parse(output);
    expect(config.server.host).toBe('0.0.0.0');
    expect(config.metrics.host).toBe('0.0.0.0');
    expect(args.join(' ')).not.toContain('--host');
  });

  it('listens where VLLM_ROUTER_HOST says (set in the environment, no flag) and exits 0 on SIGTERM', async () => {
    engines = await startEngines(1);
    const argv = dockerRunArgv(dockerfileRuntime(), [...EPHEMERAL, '--worker-urls', engines[0]!.url]);
    const [, ...args] = argv.slice(argv.indexOf('--') + 1);
    const env = {
      ...dockerfileEnv(),
      VLLM_ROUTER_HOST: '127.0.0.1',
      VLLM_ROUTER_PROMETHEUS_HOST: '127.0.0.1',
      VLLM_ROUTER_SHUTDOWN_DRAIN_DELAY_SECS: '0',
    };
    const router = await spawnRouter(process.execPath, args, { env });
    routers.push(router);
    expect(router.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(router.output()).toMatch(/metrics=http:\/\/127\.0\.0\.1:\d+\/metrics/);
    expect((await fetch(`${router.url}/liveness`)).status).toBe(200);
    router.child.kill('SIGTERM');
    expect(await router.exited).toBe(0);
  });
});

describe('inbound keep-alive', () => {
  it('advertises --keep-alive-timeout-secs (default 75) on its responses', async () => {
    engines = await startEngines(1);
    const defaults = await start([...EPHEMERAL, '--worker-urls', engines[0]!.url]);
    const custom = await start([
      ...EPHEMERAL,
      '--worker-urls',
      engines[0]!.url,
      '--keep-alive-timeout-secs',
      '12',
    ]);
    routers.push(defaults, custom);
    expect((await fetch(`${defaults.url}/liveness`)).headers.get('keep-alive')).toBe('timeout=75');
    expect((await fetch(`${custom.url}/liveness`)).headers.get('keep-alive')).toBe('timeout=12');
  });
});

describe('SIGTERM', () => {
  it('stops accepting, lets the in-flight stream finish, then exits 0', async () => {
    engines = await startEngines(1, { tokens: 20, ttftMs: 5, itlMs: 25 });
    const router = await start([...EPHEMERAL, '--worker-urls', engines[0]!.url, '--policy', 'round_robin']);
    routers.push(router);
    const client = new OpenAI({ baseURL: `${router.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const stream = await client.chat.completions.create({
      model: 'sim-model',
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
    });
    const chunks: string[] = [];
    let signalled = false;
    for await (const chunk of stream) {
      chunks.push(chunk.choices[0]?.delta.content ?? '');
      if (!signalled) {
        signalled = true;
        router.child.kill('SIGTERM');
      }
    }
    expect(chunks.length).toBeGreaterThanOrEqual(20);
    expect(await router.exited).toBe(0);
    await expect(fetch(`${router.url}/liveness`)).rejects.toThrow();
    expect(engines[0]!.engine.log[0]?.completed).toBe(true);
  });
});

describe('Kubernetes discovery without credentials', () => {
  it('exits 2 with one line naming --service-discovery and where credentials come from', async () => {
    const { code, output } = await run(['--service-discovery', '--selector', 'app=vllm'], {
      KUBECONFIG: '',
      HOME: '/nonexistent',
      KUBERNETES_SERVICE_HOST: '',
    });
    expect(code).toBe(2);
    expect(output).toContain('--service-discovery');
    expect(output).toContain('no Kubernetes credentials');
  });
});
