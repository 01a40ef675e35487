/**
 * The core's command (`runCli`) driven with fake I/O and a fake clock: the messages and exit codes
 * of --help, --version, --check-config and configuration errors (a port in use among them); `.env`
 * under the environment; the demo engines only with --demo; the empty-fleet warning; and the
 * shutdown sequence: readiness 503 first, the listener closed after the drain delay, the grace
 * period, the cut (exit 1) when it runs out, and a second signal cutting it short.
 */
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it, vi } from 'vitest';
import {
  type CliIo,
  type CliSignal,
  type DemoEngines,
  type DotEnvFile,
  listenError,
  runCli,
  type ServingRouter,
} from '../../src/core/cli.ts';
import type { RouterConfig } from '../../src/core/config/schema.ts';
import { FakeClock } from '../support/fake-clock.ts';

interface Fake {
  io: CliIo;
  clock: FakeClock;
  out: string[];
  err: string[];
  codes: number[];
  /** Resolves with the first exit code. */
  exited: Promise<number>;
  logs: { level: 'info' | 'warn'; msg: string; fields?: Record<string, unknown> }[];
  served: RouterConfig[];
  signal(name: CliSignal): void;
  router: {
    beginDrain: ReturnType<typeof vi.fn<() => void>>;
    stopAccepting: ReturnType<typeof vi.fn<() => Promise<void>>>;
    shutdown: ReturnType<typeof vi.fn<() => Promise<void>>>;
  };
  demo: { start: ReturnType<typeof vi.fn>; close: ReturnType<typeof vi.fn<() => Promise<void>>> };
}

/** Lets the promise chains of the command run (no time passes on the fake clock). */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
}

function fake(
  argv: string[],
  options: { env?: Record<string, string>; dotEnv?: DotEnvFile; drained?: () => Promise<void> } = {},
): Fake {
  const out: string[] = [];
  const err: string[] = [];
  const codes: number[] = [];
  const logs: Fake['logs'] = [];
  const served: RouterConfig[] = [];
  const handlers = new Map<CliSignal, () => void>();
  const clock = new FakeClock();
  let onExit: (code: number) => void = () => {};
  const exited = new Promise<number>((resolve) => {
    onExit = resolve;
  });
  const router = {
    beginDrain: vi.fn(() => {}),
    stopAccepting: vi.fn(() => options.drained?.() ?? Promise.resolve()),
    shutdown: vi.fn(() => Promise.resolve()),
  };
  const demo = {
    close: vi.fn(() => Promise.resolve()),
    start: vi.fn(
      async (): Promise<DemoEngines> => ({
        urls: ['http://127.0.0.1:7001', 'http://127.0.0.1:7002'],
        close: demo.close,
      }),
    ),
  };
  const serving: ServingRouter = {
    url: 'http://127.0.0.1:8080',
    metricsUrl: 'http://127.0.0.1:9000/metrics',
    logger: {
      info: (msg, fields) => void logs.push({ level: 'info', msg, ...(fields ? { fields } : {}) }),
      warn: (msg, fields) => void logs.push({ level: 'warn', msg, ...(fields ? { fields } : {}) }),
    },
    listening: { runtime: 'fake' },
    ...router,
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
    startDemo: demo.start,
    clock,
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
  return { io, clock, out, err, codes, exited, logs, served, signal, router, demo };
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
    // P2P-NCCL registration needs a ZMQ socket: a runtime without it (this fake host) refuses.
    const f = fake(['--vllm-pd-disaggregation', '--vllm-discovery-address', '127.0.0.1:9000']);
    await runCli(f.io);
    expect(f.codes).toEqual([2]);
    expect(f.err[0]).toMatch(/^error: .*--vllm-discovery-address.*not available here/);
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

  it('--check-config prints the detected dialect and why; --config reads that output back', async () => {
    const f = fake([
      '--service-discovery',
      'static',
      '--static-backends',
      'http://127.0.0.1:8001',
      '--routing-logic',
      'kvaware',
      '--max-retries',
      '3',
      '--check-config',
    ]);
    await runCli(f.io);
    expect(f.codes).toEqual([0]);
    const printed = JSON.parse(f.out.join('\n')) as RouterConfig & { dialect: unknown };
    expect(Object.keys(printed)[0]).toBe('dialect');
    expect(printed.dialect).toEqual({
      name: 'production-stack',
      because: ['--service-discovery static', '--static-backends', '--routing-logic', '--max-retries'],
      retries: 'off: no --enable-retries (one attempt per request)',
    });
    expect(printed.retry).toMatchObject({ disabled: true, maxRetries: 5 });
    expect(f.err).toEqual([
      expect.stringMatching(
        /^warning: --routing-logic kvaware routes with cache_aware: a prefix tree .*not a lookup in LMCache/,
      ),
      expect.stringMatching(/^warning: --max-retries ignored: --enable-retries is absent/),
    ]);

    const again = fake(['--config', 'router.json', '--check-config']);
    again.io.readTextFile = () => f.out.join('\n');
    await runCli(again.io);
    expect(again.codes).toEqual([0]);
    const reread = JSON.parse(again.out.join('\n')) as RouterConfig & { dialect: { name: string } };
    expect(reread.dialect.name).toBe('vllm-router');
    expect({ ...reread, dialect: undefined }).toEqual({ ...printed, dialect: undefined });
  });

  it('installs `vllm-router` beside `vllm-edge-router`, the same command', () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      bin: Record<string, string>;
    };
    expect(pkg.bin['vllm-router']).toBe(pkg.bin['vllm-edge-router']);
    expect(existsSync(new URL(`../../${pkg.bin['vllm-router']}`, import.meta.url))).toBe(true);
  });

  it('a failure while starting prints `fatal: ...` and exits 1', async () => {
    const f = fake(WORKERS);
    f.io.serve = () => Promise.reject(new Error('disk on fire'));
    await runCli(f.io);
    expect(f.codes).toEqual([1]);
    expect(f.err[0]).toMatch(/^fatal: Error: disk on fire/);
  });

  it('a port in use is one line naming the flag, exit 2, no stack trace', async () => {
    const f = fake(WORKERS);
    f.io.serve = () =>
      Promise.reject(
        listenError(
          { portFlag: '--port', hostFlag: '--host', host: '127.0.0.1', port: 30000 },
          'in_use',
          'x',
        ),
      );
    await runCli(f.io);
    expect(f.codes).toEqual([2]);
    expect(f.err).toEqual(['error: --port 30000: address 127.0.0.1:30000 is already in use']);
  });
});

describe('listenError', () => {
  it.each([
    ['in_use', 'error: --prometheus-port 29000: address [::1]:29000 is already in use'],
    [
      'denied',
      'error: --prometheus-port 29000: no permission to listen on [::1]:29000 (ports below 1024 need privileges)',
    ],
    [
      'not_local',
      'error: --prometheus-host ::1: cannot listen on [::1]:29000: not an address of this machine',
    ],
    ['other', 'error: --prometheus-port 29000: cannot listen on [::1]:29000: boom'],
  ] as const)('%s', (problem, line) => {
    const target = { portFlag: '--prometheus-port', hostFlag: '--prometheus-host', host: '::1', port: 29000 };
    const err = listenError(target, problem, 'boom');
    expect(`error: ${err.message}`).toBe(line);
    expect(err.exitCode).toBe(2);
  });
});

describe('runCli serving', () => {
  it('logs the listening line; SIGTERM turns readiness 503 first, closes the listener after the drain delay, exits 0', async () => {
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
    await settle();
    expect(f.router.beginDrain).toHaveBeenCalledOnce();
    expect(f.router.stopAccepting).not.toHaveBeenCalled();
    f.clock.advance(4999);
    await settle();
    expect(f.router.stopAccepting).not.toHaveBeenCalled();
    f.clock.advance(1);
    expect(await f.exited).toBe(0);
    expect(f.router.stopAccepting).toHaveBeenCalledOnce();
    expect(f.router.shutdown).not.toHaveBeenCalled();
    expect(f.logs.map((l) => l.msg)).toEqual([
      'vllm-edge-router listening on http://127.0.0.1:8080',
      'SIGTERM received: /readiness answers 503; the listener closes in 5s, then requests in flight get 30s (grace)',
      'listener closed: waiting for the requests in flight',
      'drained: every request finished; exiting 0',
    ]);
    expect(f.codes).toEqual([0]);
    expect(f.clock.pendingTimers).toBe(0);
  });

  it('--shutdown-drain-delay-secs 0 closes the listener at once', async () => {
    const f = fake([...WORKERS, '--shutdown-drain-delay-secs', '0']);
    await runCli(f.io);
    f.signal('SIGINT');
    expect(await f.exited).toBe(0);
    expect(f.router.beginDrain).toHaveBeenCalledOnce();
    expect(f.router.stopAccepting).toHaveBeenCalledOnce();
  });

  it('the grace period running out cuts the requests in flight and exits 1', async () => {
    const f = fake([...WORKERS, '--shutdown-grace-period-secs', '10'], {
      drained: () => new Promise<void>(() => {}),
    });
    await runCli(f.io);
    f.signal('SIGTERM');
    f.clock.advance(5000);
    await settle();
    expect(f.router.stopAccepting).toHaveBeenCalledOnce();
    f.clock.advance(9999);
    await settle();
    expect(f.router.shutdown).not.toHaveBeenCalled();
    f.clock.advance(1);
    expect(await f.exited).toBe(1);
    expect(f.router.shutdown).toHaveBeenCalledOnce();
    expect(f.logs.at(-1)).toEqual({
      level: 'warn',
      msg: 'grace period over: cutting the requests still in flight; exiting 1',
    });
  });

  it('requests finishing within the grace period: exit 0, no cut', async () => {
    let finish: () => void = () => {};
    const f = fake(WORKERS, { drained: () => new Promise<void>((resolve) => (finish = resolve)) });
    await runCli(f.io);
    f.signal('SIGTERM');
    f.clock.advance(5000);
    await settle();
    f.clock.advance(29_000);
    finish();
    expect(await f.exited).toBe(0);
    expect(f.router.shutdown).not.toHaveBeenCalled();
    expect(f.clock.pendingTimers).toBe(0);
  });

  it('without --demo and no workers: no simulated engines, an empty fleet and a warning', async () => {
    const f = fake([]);
    await runCli(f.io);
    expect(f.demo.start).not.toHaveBeenCalled();
    expect(f.served[0]?.workers.urls).toEqual([]);
    expect(f.out).toEqual([]);
    expect(f.logs[1]?.level).toBe('warn');
    expect(f.logs[1]?.msg).toMatch(
      /^no workers configured: .*\/readiness answers 503 \(no_available_workers\).*add one with POST \/workers or \/add_worker/,
    );
    expect(f.codes).toEqual([]);
  });

  it('--demo with no workers serves two demo engines and closes them after the drain', async () => {
    const f = fake(['--demo', '--shutdown-grace-period-secs', '5', '--shutdown-drain-delay-secs', '0']);
    await runCli(f.io);
    expect(f.out.join('\n')).toContain(
      '--demo and no workers configured (--worker-urls): started two simulated vLLM engines at http://127.0.0.1:7001, http://127.0.0.1:7002.',
    );
    expect(f.served[0]?.workers.urls).toEqual(['http://127.0.0.1:7001', 'http://127.0.0.1:7002']);
    f.signal('SIGINT');
    expect(await f.exited).toBe(0);
    expect(f.logs[1]?.msg).toBe(
      'SIGINT received: /readiness answers 503; the listener closes in 0s, then requests in flight get 5s (grace)',
    );
    expect(f.demo.close).toHaveBeenCalledOnce();
  });

  it('--demo with workers configured starts no demo engines, and says so', async () => {
    const f = fake(['--demo', ...WORKERS]);
    await runCli(f.io);
    expect(f.demo.start).not.toHaveBeenCalled();
    expect(f.served[0]?.workers.urls).toEqual(['http://127.0.0.1:8001']);
    expect(f.logs[1]).toEqual({
      level: 'info',
      msg: '--demo ignored: workers are configured, no simulated engines started',
      fields: { workers: 1 },
    });
  });

  it('--demo engines are closed when serving fails (a port in use)', async () => {
    const f = fake(['--demo']);
    f.io.serve = () =>
      Promise.reject(
        listenError({ portFlag: '--port', hostFlag: '--host', host: '0.0.0.0', port: 1 }, 'in_use', ''),
      );
    await runCli(f.io);
    expect(f.codes).toEqual([2]);
    expect(f.demo.close).toHaveBeenCalledOnce();
  });

  it.each([
    ['SIGTERM', 143],
    ['SIGINT', 130],
  ] as const)('a second %s during the drain exits %i at once', async (name, code) => {
    const f = fake(WORKERS, { drained: () => new Promise<void>(() => {}) });
    await runCli(f.io);
    f.signal(name);
    f.clock.advance(5000);
    await settle();
    expect(f.codes).toEqual([]);
    f.signal(name);
    expect(await f.exited).toBe(code);
    expect(f.codes).toEqual([code]);
    expect(f.router.stopAccepting).toHaveBeenCalledOnce();
    expect(f.router.shutdown).not.toHaveBeenCalled();
  });

  it('a second signal during the drain delay exits at once too', async () => {
    const f = fake(WORKERS);
    await runCli(f.io);
    f.signal('SIGTERM');
    f.signal('SIGTERM');
    expect(await f.exited).toBe(143);
    expect(f.router.stopAccepting).not.toHaveBeenCalled();
  });

  it('a drain that fails prints `fatal: ...` and exits 1', async () => {
    const f = fake([...WORKERS, '--shutdown-drain-delay-secs', '0'], {
      drained: () => Promise.reject(new Error('close failed')),
    });
    await runCli(f.io);
    f.signal('SIGTERM');
    expect(await f.exited).toBe(1);
    expect(f.err[0]).toMatch(/^fatal: Error: close failed/);
  });
});
