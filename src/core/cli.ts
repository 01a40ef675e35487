/**
 * The `vllm-edge-router` command, once for every runtime: resolve the configuration (flags, the
 * environment merged over `.env`, ROUTER_CONFIG, `--config FILE`), answer --help, --version and
 * --check-config, start the demo engines when no workers are configured, serve, log the listening
 * line, and drain on SIGTERM/SIGINT (a second signal exits at once: 130 for SIGINT, 143 for SIGTERM).
 *
 * Every message and exit code lives here; the host supplies I/O through `CliIo` (Node and Deno
 * main.ts). Exit codes: 0 done, 2 configuration error (ConfigError), 1 anything unexpected.
 */
import { parseDotEnv } from './config/dotenv.ts';
import { ConfigError } from './config/errors.ts';
import { renderHelp } from './config/help.ts';
import { type ResolvedConfig, resolveConfig } from './config/load.ts';
import type { RouterConfig } from './config/schema.ts';
import { assertSupported } from './config/unsupported.ts';
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
  /** Stops accepting and drains; true when everything finished within the grace period. */
  close(): Promise<boolean>;
}

/** Simulated engines for the demo (no workers configured). */
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
  serve(config: RouterConfig): Promise<ServingRouter>;
  startDemo(): Promise<DemoEngines>;
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
      io.stdout(JSON.stringify(resolved.config, null, 2));
    } else {
      await serveUntilSignal(io, resolved.config);
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
    if (!resolved.help && !resolved.version) assertSupported(resolved.config);
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
    `No workers configured (--worker-urls): started two simulated vLLM engines for a demo at ${demo.urls.join(', ')}.\n` +
      `Pass --worker-urls http://HOST:PORT ... to route to real engines.`,
  );
  return demo;
}

async function serveUntilSignal(io: CliIo, resolved: RouterConfig): Promise<void> {
  let config = resolved;
  let demo: DemoEngines | undefined;
  if (config.workers.urls.length === 0 && !config.pd.enabled) {
    demo = await startDemo(io);
    config = { ...config, workers: { ...config.workers, urls: demo.urls } };
  }
  const router = await io.serve(config);
  router.logger.info(`${PROGRAM} listening on ${router.url}`, {
    ...router.listening,
    workers: config.workers.urls.length,
    policy: config.policy.name,
    metrics: router.metricsUrl,
  });

  let draining = false;
  const stop = async (signal: CliSignal) => {
    if (draining) {
      io.exit(SECOND_SIGNAL_EXIT[signal]);
      return;
    }
    draining = true;
    router.logger.info(`${signal} received: draining (grace ${config.server.shutdownGraceSecs}s)`);
    if (await router.close()) await demo?.close();
    else router.logger.warn('grace period over: exiting with requests still in flight');
    io.exit(0);
  };
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    io.onSignal(signal, () => {
      stop(signal).catch((err: unknown) => fail(io, err));
    });
  }
}
