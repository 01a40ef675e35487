/**
 * The `vllm-edge-router` command, once for every runtime: resolve the configuration (flags, the
 * environment merged over `.env`, ROUTER_CONFIG, `--config FILE`), answer --help, --version and
 * --check-config, start the demo engines with `--demo` when no workers are configured, serve (the
 * listeners bind first, the startup probing runs behind them), log the listening line, and drain on
 * SIGTERM/SIGINT (drainAndStop; a second signal exits at once: 130 for SIGINT, 143 for SIGTERM).
 *
 * Every message and exit code lives here; the host supplies I/O through `CliIo` (Node and Deno
 * main.ts). Exit codes: 0 done (after a signal: every request finished), 1 the grace period ran
 * out and requests were cut, or anything unexpected, 2 configuration error (ConfigError: bad flags,
 * a port already in use).
 */
import { parseDotEnv } from './config/dotenv.ts';
import { ConfigError } from './config/errors.ts';
import { renderHelp } from './config/help.ts';
import { type ResolvedConfig, resolveConfig } from './config/load.ts';
import type { RouterConfig } from './config/schema.ts';
import { maskSecrets } from './config/secrets.ts';
import { assertSupported, type RuntimeFeatures } from './config/unsupported.ts';
import { type Clock, systemClock } from './contracts/runtime.ts';
import type { Logger } from './observability/logger.ts';

export const PROGRAM = 'vllm-edge-router';

export type CliSignal = 'SIGTERM' | 'SIGINT';

/** Exit code after a second signal during the drain: 128 + the signal number. */
export const SECOND_SIGNAL_EXIT: Readonly<Record<CliSignal, number>> = { SIGINT: 130, SIGTERM: 143 };

/** The router as served by the host. */
export interface ServingRouter {
  url: string;
  metricsUrl?: string;
  logger: Pick<Logger, 'info' | 'warn'>;
  /** Host fields for the listening line (runtime, transport), before workers/policy/metrics. */
  listening?: Record<string, unknown>;
  /** Shutdown began: /readiness answers 503 (`shutting_down`) from now on; requests are still served. */
  beginDrain(): void;
  /** Closes the listeners (no new connections); resolves once every request in flight has finished. */
  stopAccepting(): Promise<void>;
  /**
   * The grace period is over: cuts what is still in flight (a stream gets a final SSE error event
   * of type `shutdown`), then closes every connection. Resolves when they are closed.
   */
  shutdown(): Promise<void>;
}

/** Simulated engines for the demo (`--demo` with no workers configured). */
export interface DemoEngines {
  urls: string[];
  close(): Promise<void>;
}

/** `.env` in the working directory, as the host could read it. */
export type DotEnvFile =
  | { status: 'found'; text: string }
  | { status: 'missing' }
  | {
      status: 'denied';
      /** How to grant the permission (Deno: `run with --allow-read=.env`). */
      hint?: string;
    };

/** Why a listener could not bind, as the host classified its error. */
export type ListenProblem = 'in_use' | 'denied' | 'not_local' | 'other';

/** A listener and the flags that configure it (`--port`/`--host`, `--prometheus-port`/`--prometheus-host`...). */
export interface ListenTarget {
  portFlag: string;
  hostFlag: string;
  host: string;
  port: number;
}

/**
 * The configuration error (exit 2, one line, no stack) for a listener that could not bind:
 * `--port 30000: address 127.0.0.1:30000 is already in use`.
 */
export function listenError(target: ListenTarget, problem: ListenProblem, detail: string): ConfigError {
  const { portFlag, hostFlag, host, port } = target;
  const address = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  const message = {
    in_use: `${portFlag} ${port}: address ${address} is already in use`,
    denied: `${portFlag} ${port}: no permission to listen on ${address} (ports below 1024 need privileges)`,
    not_local: `${hostFlag} ${host}: cannot listen on ${address}: not an address of this machine`,
    other: `${portFlag} ${port}: cannot listen on ${address}: ${detail}`,
  }[problem];
  return new ConfigError(message, { flag: problem === 'not_local' ? hostFlag : portFlag });
}

export interface CliIo {
  argv: readonly string[];
  /** The process environment; its variables win over `.env`. */
  env: Record<string, string | undefined>;
  /** Reads `.env` from the working directory. */
  readDotEnv(): DotEnvFile;
  /** Reads a config file (`--config FILE`); throws when it cannot. */
  readTextFile(path: string): string;
  /** Writes one line to stdout (the writer adds the newline). */
  stdout(line: string): void;
  /** Writes one line to stderr (the writer adds the newline). */
  stderr(line: string): void;
  version: string;
  /** What the runtime offers beyond the core (P2P-NCCL registration on Node). */
  features?: RuntimeFeatures;
  /** Binds every listener first (a port in use rejects with `listenError`), then starts probing. */
  serve(config: RouterConfig): Promise<ServingRouter>;
  startDemo(): Promise<DemoEngines>;
  /** Timers of the drain delay and the grace period (default: the system clock; a fake one in tests). */
  clock?: Pick<Clock, 'setTimeout' | 'clearTimeout'>;
  /** Calls `handler` on every delivery of `signal` (a host may ignore signals it cannot watch). */
  onSignal(signal: CliSignal, handler: () => void): void;
  /** Ends the process (the host flushes its logs first). */
  exit(code: number): void;
}

/** Runs the command; it resolves once it has exited or is serving (then a signal exits). */
export async function runCli(io: CliIo): Promise<void> {
  try {
    const resolved = resolve(io);
    if (resolved === undefined) return;
    if (resolved.help) {
      io.stdout(renderHelp());
    } else if (resolved.version) {
      io.stdout(`${PROGRAM} ${io.version}`);
    } else if (resolved.checkConfig) {
      // The dialect (production-stack or vLLM Router, and why) first; --config FILE ignores it.
      io.stdout(JSON.stringify({ dialect: resolved.dialect, ...maskSecrets(resolved.config) }, null, 2));
    } else {
      await serveUntilSignal(io, resolved.config, resolved.demo);
      return;
    }
    io.exit(0);
  } catch (err) {
    fail(io, err);
  }
}

/** The resolved configuration, or undefined after reporting a configuration error (and exiting). */
function resolve(io: CliIo): ResolvedConfig | undefined {
  let resolved: ResolvedConfig;
  try {
    const env = { ...dotEnv(io), ...io.env };
    resolved = resolveConfig({ argv: io.argv, env, readTextFile: (p) => io.readTextFile(p) });
    if (!resolved.help && !resolved.version) assertSupported(resolved.config, io.features);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    fail(io, err);
    return undefined;
  }
  for (const warning of resolved.warnings) io.stderr(`warning: ${warning}`);
  return resolved;
}

function dotEnv(io: CliIo): Record<string, string> {
  const file = io.readDotEnv();
  if (file.status === 'found') return parseDotEnv(file.text);
  if (file.status === 'denied') {
    io.stderr(`warning: .env not read: no read permission${file.hint ? ` (${file.hint})` : ''}`);
  }
  return {};
}

/** `error: ...` with the ConfigError's exit code (2), or `fatal: ...` with 1 for anything else. */
function fail(io: CliIo, err: unknown): void {
  if (err instanceof ConfigError) {
    io.stderr(`error: ${err.message}`);
    io.exit(err.exitCode);
    return;
  }
  io.stderr(`fatal: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  io.exit(1);
}

async function startDemo(io: CliIo): Promise<DemoEngines> {
  const demo = await io.startDemo();
  io.stdout(
    `--demo and no workers configured (--worker-urls): started two simulated vLLM engines at ${demo.urls.join(', ')}.\n` +
      `Pass --worker-urls http://HOST:PORT ... to route to real engines.`,
  );
  return demo;
}

/** Serves; with --demo and no workers, in front of two simulated engines (closed if serving fails). */
async function serveWithDemo(
  io: CliIo,
  config: RouterConfig,
  wantsDemo: boolean,
): Promise<{ router: ServingRouter; config: RouterConfig; demo?: DemoEngines }> {
  if (!wantsDemo || config.workers.urls.length > 0 || config.pd.enabled) {
    return { router: await io.serve(config), config };
  }
  const demo = await startDemo(io);
  const withDemo = { ...config, workers: { ...config.workers, urls: demo.urls } };
  try {
    return { router: await io.serve(withDemo), config: withDemo, demo };
  } catch (err) {
    await demo.close();
    throw err;
  }
}

/** What the operator should know once the router listens: an empty fleet, an ignored --demo. */
function logStartupNotes(
  router: ServingRouter,
  config: RouterConfig,
  wantsDemo: boolean,
  demo: boolean,
): void {
  const configured = configuredWorkers(config);
  if (configured === 0 && config.pd.discoveryAddress !== undefined) {
    router.logger.info(`workers register over ZMQ (--vllm-discovery-address ${config.pd.discoveryAddress})`);
  } else if (configured === 0) {
    router.logger.warn(
      'no workers configured: the fleet is empty and /readiness answers 503 (no_available_workers) until one ' +
        'is healthy; add one with POST /workers or /add_worker (admin API), or restart with --worker-urls ' +
        '(--demo starts two simulated engines)',
    );
  } else if (wantsDemo && !demo) {
    router.logger.info('--demo ignored: workers are configured, no simulated engines started', {
      workers: configured,
    });
  }
}

/** Worker URLs on the command line: regular, prefill and decode. */
function configuredWorkers(config: RouterConfig): number {
  return config.workers.urls.length + config.pd.prefill.length + config.pd.decode.length;
}

/** A timer as a promise (a 0 ms one still waits a timer turn, so work already finishing can win). */
function wait(
  clock: Pick<Clock, 'setTimeout' | 'clearTimeout'>,
  ms: number,
): { done: Promise<void>; cancel(): void } {
  let handle: unknown;
  const done = new Promise<void>((resolve) => {
    handle = clock.setTimeout(resolve, ms);
  });
  return { done, cancel: () => clock.clearTimeout(handle) };
}

/**
 * The shutdown sequence: /readiness 503 for --shutdown-drain-delay-secs while requests are still
 * accepted (load balancers take the router out), then the listener closes and the requests in
 * flight get --shutdown-grace-period-secs. Resolves with the exit code: 0 when everything
 * finished, 1 when the grace period ran out and requests were cut.
 */
async function drainAndStop(io: CliIo, router: ServingRouter, config: RouterConfig, signal: CliSignal) {
  const { shutdownDrainDelaySecs: delaySecs, shutdownGraceSecs: graceSecs } = config.server;
  router.logger.info(
    `${signal} received: /readiness answers 503; the listener closes in ${delaySecs}s, ` +
      `then requests in flight get ${graceSecs}s (grace)`,
  );
  const clock = io.clock ?? systemClock;
  router.beginDrain();
  if (delaySecs > 0) await wait(clock, delaySecs * 1000).done;
  router.logger.info('listener closed: waiting for the requests in flight', { grace_secs: graceSecs });
  const grace = wait(clock, graceSecs * 1000);
  const finished = await Promise.race([
    router.stopAccepting().then(() => true),
    grace.done.then(() => false),
  ]);
  grace.cancel();
  if (finished) {
    router.logger.info('drained: every request finished; exiting 0');
    return 0;
  }
  router.logger.warn('grace period over: cutting the requests still in flight; exiting 1');
  await router.shutdown();
  return 1;
}

async function serveUntilSignal(io: CliIo, resolved: RouterConfig, wantsDemo: boolean): Promise<void> {
  const { router, config, demo } = await serveWithDemo(io, resolved, wantsDemo);
  router.logger.info(`${PROGRAM} listening on ${router.url}`, {
    ...router.listening,
    workers: configuredWorkers(config),
    policy: config.policy.name,
    metrics: router.metricsUrl,
  });
  logStartupNotes(router, config, wantsDemo, demo !== undefined);

  let draining = false;
  const stop = async (signal: CliSignal) => {
    if (draining) {
      io.exit(SECOND_SIGNAL_EXIT[signal]);
      return;
    }
    draining = true;
    const code = await drainAndStop(io, router, config, signal);
    if (code === 0) await demo?.close();
    io.exit(code);
  };
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    io.onSignal(signal, () => {
      stop(signal).catch((err: unknown) => fail(io, err));
    });
  }
}
