/**
 * What the Deno command supplies to the core's `runCli`: `.env` from the working directory (a
 * missing read permission is reported, not fatal), the demo's two simulated engines (`--demo`;
 * `Deno.serve` on loopback), the server for the CLI, and signals (Windows can only watch SIGINT).
 */
import type { CliSignal, DemoEngines, DotEnvFile, ServingRouter } from '../../core/cli.ts';
import type { RouterConfig } from '../../core/config/schema.ts';
import { createSimEngine } from '../../sim/engine.ts';
import type { StdoutLog } from './log-sink.ts';
import { openDenoRouter, serveOn, urlOf } from './server.ts';

/** `.env` in the working directory: its text, missing, or not readable (no read permission). */
export function readDotEnv(): DotEnvFile {
  try {
    return { status: 'found', text: Deno.readTextFileSync('.env') };
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return { status: 'missing' };
    if (err instanceof Deno.errors.NotCapable || err instanceof Deno.errors.PermissionDenied) {
      return { status: 'denied', hint: 'run with --allow-read=.env' };
    }
    throw err;
  }
}

export function startDemoEngines(): Promise<DemoEngines> {
  const servers = ['sim-a', 'sim-b'].map((id) =>
    serveOn('127.0.0.1', 0, createSimEngine({ id, ttftMs: 30, itlMs: 15 }).fetch),
  );
  return Promise.resolve({
    urls: servers.map((server) => urlOf('127.0.0.1', server.addr.port)),
    close: async () => void (await Promise.all(servers.map((server) => server.shutdown()))),
  });
}

/** The command's server: the registration socket and the listeners bound, the workers probed behind them. */
export async function serveDeno(config: RouterConfig, log: StdoutLog): Promise<ServingRouter> {
  // As on Node: undici by default, VLLM_EDGE_ROUTER_TRANSPORT=fetch for Deno's own fetch (to compare).
  const transport = Deno.env.get('VLLM_EDGE_ROUTER_TRANSPORT') === 'fetch' ? 'fetch' : 'undici';
  const router = await openDenoRouter(config, { logSink: log.sink, transport });
  log.reportToRouter(router.router);
  return {
    url: router.url,
    metricsUrl: router.metricsUrl,
    logger: router.logger,
    listening: {
      runtime: `deno ${Deno.version.deno}`,
      transport,
      // Deno.serve has no keep-alive setting: Deno closes idle connections on its own schedule.
      keep_alive_timeout_secs: 'not applicable on Deno',
      ...(router.healthUrl === undefined ? {} : { health: router.healthUrl }),
      ...(router.p2pAddress === undefined ? {} : { p2p_discovery: router.p2pAddress }),
    },
    beginDrain: () => router.beginDrain(),
    stopAccepting: () => router.stopAccepting(),
    shutdown: () => router.shutdown(),
  };
}

export function onSignal(signal: CliSignal, handler: () => void): void {
  if (Deno.build.os === 'windows' && signal !== 'SIGINT') return;
  Deno.addSignalListener(signal, handler);
}
