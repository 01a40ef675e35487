/**
 * The core's command (`runCli`) driven with fake I/O: the messages and exit codes of --help,
 * --version, --check-config and configuration errors; `.env` under the environment; the demo
 * engines; serving, the drain on a signal, and a second signal cutting it short.
 */
import { describe, expect, it, vi } from 'vitest';
import {
  type CliIo,
  type CliSignal,
  type DemoEngines,
  type DotEnvFile,
  runCli,
  type ServingRouter,
} from '../../src/core/cli.ts';
import type { RouterConfig } from '../../src/core/config/schema.ts';

interface Fake {
  io: CliIo;
  out: string[];
  err: string[];
  codes: number[];
  /** Resolves with the first exit code. */
  exited: Promise<number>;
  logs: { level: 'info' | 'warn'; msg: string; fields?: Record<string, unknown> }[];
  served: RouterConfig[];
  signal(name: CliSignal): void;
  router: { close: ReturnType<typeof vi.fn<() => Promise<boolean>>> };
  demo: { close: ReturnType<typeof vi.fn<() => Promise<void>>> };
}

function fake(
  argv: string[],
  options: { env?: Record<string, string>; dotEnv?: DotEnvFile; drained?: () => Promise<boolean> } = {},
): Fake {
  const out: string[] = [];
  const err: string[] = [];
  const codes: number[] = [];
  const logs: Fake['logs'] = [];
  const served: RouterConfig[] = [];
  const handlers = new Map<CliSignal, () => void>();
  let onExit: (code: number) => void = () => {};
  const exited = new Promise<number>((resolve) => {
    onExit = resolve;
  });
  const router = { close: vi.fn(() => options.drained?.() ?? Promise.resolve(true)) };
  const demo = { close: vi.fn(() => Promise.resolve()) };
  const serving: ServingRouter = {
    url: 'http://127.0.0.1:8080',
    metricsUrl: 'http://127.0.0.1:9000/metrics',
    logger: {
      info: (msg, fields) => void logs.push({ level: 'info', msg, ...(fields ? { fields } : {}) }),
      warn: (msg, fields) => void logs.push({ level: 'warn', msg, ...(fields ? { fields } : {}) }),
    },
    listening: { runtime: 'fake' },
    close: router.close,
  };
  const io: CliIo = {
    argv,
    env: options.env ?? {},
    readDotEnv: () => options.dotEnv ?? { status: 'missing' },
    readTextFile: (path) => {
      throw new Error(`no such file: ${path}`);
    },
    stdout: (line) => void out.push(line),
    stderr: (line) => void err.push(line),
    version: '9.8.7',
    serve: async (config) => {
      served.push(config);
      return serving;
    },
    startDemo: async (): Promise<DemoEngines> => ({
      urls: ['http://127.0.0.1:7001', 'http://127.0.0.1:7002'],
      close: demo.close,
    }),
    onSignal: (name, handler) => void handlers.set(name, handler),
    exit: (code) => {
      codes.push(code);
      onExit(code);
    },
  };
  const signal = (name: CliSignal) => {
    const handler = handlers.get(name);
    if (!handler) throw new Error(`no ${name} handler`);
    handler();
  };
  return { io, out, err, codes, exited, logs, served, signal, router, demo };
}

const WORKERS = ['--worker-urls', 'http://127.0.0.1:8001'];

describe('runCli without serving', () => {
  it('--help prints the flags and exits 0', async () => {
    const f = fake(['--help']);
    await runCli(f.io);
    expect(f.codes).toEqual([0]);
    expect(f.out.join('\n')).toContain('--worker-urls');
    expect(f.out.join('\n')).toContain('--retry-max-retries');
    expect(f.served).toEqual([]);
  });

  it('--version prints the version it is given and exits 0', async () => {
    const f = fake(['--version']);
    await runCli(f.io);
    expect(f.out).toEqual(['vllm-edge-router 9.8.7']);
    expect(f.codes).toEqual([0]);
  });

  it('a configuration error prints `error: ...` and exits 2 without serving', async () => {
    const f = fake(['--wroker-urls', 'http://127.0.0.1:1']);
    await runCli(f.io);
    expect(f.err).toEqual(['error: unknown flag --wroker-urls (did you mean --worker-urls?)']);
    expect(f.codes).toEqual([2]);
    expect(f.out).toEqual([]);
    expect(f.served).toEqual([]);
  });

  it('a feature this release does not have exits 2', async () => {
    const f = fake([...WORKERS, '--api-key-validation-urls', 'http://127.0.0.1:9/validate']);
    await runCli(f.io);
    expect(f.codes).toEqual([2]);
    expect(f.err[0]).toMatch(/^error: .*--api-key-validation-urls.*not available in this release/);
  });

  it('an unreadable --config file exits 2 naming it', async () => {
    const f = fake(['--config', 'router.json']);
    await runCli(f.io);
    expect(f.codes).toEqual([2]);
    expect(f.err[0]).toContain('--config router.json: cannot read the file: no such file: router.json');
  });

  it('--check-config prints the resolved configuration: flags over the environment over .env', async () => {
    const f = fake(['--policy', 'round_robin', '--check-config'], {
      env: { VLLM_ROUTER_RETRY_MAX_RETRIES: '7', VLLM_ROUTER_POLICY: 'power_of_two' },
      dotEnv: {
        status: 'found',
        text: 'VLLM_ROUTER_WORKER_URLS=http://127.0.0.1:8001,http://127.0.0.1:8002\nVLLM_ROUTER_RETRY_MAX_RETRIES=3\n',
      },
    });
    await runCli(f.io);
    expect(f.codes).toEqual([0]);
    const config = JSON.parse(f.out.join('\n')) as RouterConfig;
    expect(config.workers.urls).toEqual(['http://127.0.0.1:8001', 'http://127.0.0.1:8002']);
    expect(config.policy.name).toBe('round_robin');
    expect(config.retry.maxRetries).toBe(7);
    expect(f.served).toEqual([]);
  });

  it('warns when .env cannot be read, and about ignored variables, then goes on', async () => {
    const f = fake([...WORKERS, '--check-config'], {
      env: { VLLM_ROUTER_WROKER_URLS: 'x' },
      dotEnv: { status: 'denied', hint: 'run with --allow-read=.env' },
    });
    await runCli(f.io);
    expect(f.err[0]).toBe('warning: .env not read: no read permission (run with --allow-read=.env)');
    expect(f.err[1]).toMatch(/^warning: unknown environment variable VLLM_ROUTER_WROKER_URLS ignored/);
    expect(f.codes).toEqual([0]);
  });

  it('a failure while starting prints `fatal: ...` and exits 1', async () => {
    const f = fake(WORKERS);
    f.io.serve = () => Promise.reject(new Error('address in use'));
    await runCli(f.io);
    expect(f.codes).toEqual([1]);
    expect(f.err[0]).toMatch(/^fatal: Error: address in use/);
  });
});

describe('runCli serving', () => {
  it('logs the listening line, drains on SIGTERM and exits 0', async () => {
    const f = fake([...WORKERS, '--policy', 'round_robin']);
    await runCli(f.io);
    expect(f.codes).toEqual([]);
    expect(f.served[0]?.workers.urls).toEqual(['http://127.0.0.1:8001']);
    expect(f.logs[0]).toEqual({
      level: 'info',
      msg: 'vllm-edge-router listening on http://127.0.0.1:8080',
      fields: {
        runtime: 'fake',
        workers: 1,
        policy: 'round_robin',
        metrics: 'http://127.0.0.1:9000/metrics',
      },
    });
    f.signal('SIGTERM');
    expect(await f.exited).toBe(0);
    expect(f.router.close).toHaveBeenCalledOnce();
    expect(f.logs.map((l) => l.msg)).toEqual([
      'vllm-edge-router listening on http://127.0.0.1:8080',
      'SIGTERM received: draining (grace 30s)',
    ]);
    expect(f.codes).toEqual([0]);
  });

  it('with no workers, serves two demo engines and closes them after the drain', async () => {
    const f = fake(['--shutdown-grace-period-secs', '5']);
    await runCli(f.io);
    expect(f.out.join('\n')).toContain(
      'No workers configured (--worker-urls): started two simulated vLLM engines for a demo at http://127.0.0.1:7001, http://127.0.0.1:7002.',
    );
    expect(f.served[0]?.workers.urls).toEqual(['http://127.0.0.1:7001', 'http://127.0.0.1:7002']);
    f.signal('SIGINT');
    expect(await f.exited).toBe(0);
    expect(f.logs[1]?.msg).toBe('SIGINT received: draining (grace 5s)');
    expect(f.demo.close).toHaveBeenCalledOnce();
  });

  it('warns when the grace period ran out, and still exits 0', async () => {
    const f = fake(WORKERS, { drained: async () => false });
    await runCli(f.io);
    f.signal('SIGTERM');
    expect(await f.exited).toBe(0);
    expect(f.logs.at(-1)).toEqual({
      level: 'warn',
      msg: 'grace period over: exiting with requests still in flight',
    });
  });

  it.each([
    ['SIGTERM', 143],
    ['SIGINT', 130],
  ] as const)('a second %s during the drain exits %i at once', async (name, code) => {
    const f = fake(WORKERS, { drained: () => new Promise<boolean>(() => {}) });
    await runCli(f.io);
    f.signal(name);
    await Promise.resolve();
    expect(f.codes).toEqual([]);
    f.signal(name);
    expect(await f.exited).toBe(code);
    expect(f.codes).toEqual([code]);
    expect(f.router.close).toHaveBeenCalledOnce();
  });

  it('a drain that fails prints `fatal: ...` and exits 1', async () => {
    const f = fake(WORKERS, { drained: () => Promise.reject(new Error('close failed')) });
    await runCli(f.io);
    f.signal('SIGTERM');
    expect(await f.exited).toBe(1);
    expect(f.err[0]).toMatch(/^fatal: Error: close failed/);
  });
});
