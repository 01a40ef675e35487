/**
 * What the Node command supplies to the core's `runCli`: `.env` from the working directory, the
 * demo's two simulated engines (`--demo`; @hono/node-server on loopback), and the server for the CLI
 * (undici transport by default; VLLM_EDGE_ROUTER_TRANSPORT=fetch uses the global fetch, for
 * comparing transports).
 */
import { readFileSync } from 'node:fs';
import type { DemoEngines, DotEnvFile, ServingRouter } from '../../core/cli.ts';
import type { RouterConfig } from '../../core/config/schema.ts';
import { fetchUpstream } from '../../core/upstream/fetch-upstream.ts';
import { startSimEngine } from '../../sim/node.ts';
import { startNodeRouter } from './server.ts';

function errorCode(err: unknown): unknown {
  return typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
}

/** `.env` in the working directory: its text, missing, or not readable (no permission). */
export function readDotEnv(): DotEnvFile {
  try {
    return { status: 'found', text: readFileSync('.env', 'utf8') };
  } catch (err) {
    const code = errorCode(err);
    if (code === 'ENOENT') return { status: 'missing' };
    if (code === 'EACCES' || code === 'EPERM') return { status: 'denied' };
    throw err;
  }
}

export async function startDemoEngines(): Promise<DemoEngines> {
  const engines = await Promise.all(
    ['sim-a', 'sim-b'].map((id) => startSimEngine({ id, host: '127.0.0.1', port: 0, ttftMs: 30, itlMs: 15 })),
  );
  return {
    urls: engines.map((e) => e.url),
    close: async () => void (await Promise.all(engines.map((e) => e.close()))),
  };
}

/** The command's server: listens at once, probes the workers behind the listener. */
export async function serveNode(config: RouterConfig): Promise<ServingRouter> {
  const transport = process.env.VLLM_EDGE_ROUTER_TRANSPORT === 'fetch' ? 'fetch' : 'undici';
  const router = await startNodeRouter(config, {
    startup: 'background',
    ...(transport === 'fetch' ? { upstream: fetchUpstream() } : {}),
  });
  return {
    url: router.url,
    ...(router.metricsUrl === undefined ? {} : { metricsUrl: router.metricsUrl }),
    logger: router.logger,
    listening: {
      transport,
      keep_alive_timeout_secs: config.server.keepAliveTimeoutSecs,
      ...(router.healthUrl === undefined ? {} : { health: router.healthUrl }),
      ...(router.p2pAddress === undefined ? {} : { p2p_discovery: router.p2pAddress }),
    },
    beginDrain: () => router.beginDrain(),
    stopAccepting: () => router.stopAccepting(),
    shutdown: () => router.shutdown(),
  };
}
