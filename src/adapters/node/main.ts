/**
 * `vllm-edge-router` on Node: parse flags, environment (.env) and config file; with no workers
 * configured, start two simulated engines in-process (the demo); serve; drain on SIGTERM/SIGINT.
 */
import { existsSync, readFileSync } from 'node:fs';
import { parseDotEnv } from '../../core/config/dotenv.ts';
import { ConfigError } from '../../core/config/errors.ts';
import { renderHelp } from '../../core/config/help.ts';
import { resolveConfig } from '../../core/config/load.ts';
import { assertSupported } from '../../core/config/unsupported.ts';
import { fetchUpstream } from '../../core/upstream/fetch-upstream.ts';
import { startSimEngine } from '../../sim/node.ts';
import { startNodeRouter } from './server.ts';

const VERSION = '0.1.0';

function environment(): Record<string, string | undefined> {
  const fromFile = existsSync('.env') ? parseDotEnv(readFileSync('.env', 'utf8')) : {};
  return { ...fromFile, ...process.env };
}

async function startDemoEngines(): Promise<{ urls: string[]; close(): Promise<void> }> {
  const engines = await Promise.all(
    ['sim-a', 'sim-b'].map((id) => startSimEngine({ id, host: '127.0.0.1', port: 0, ttftMs: 30, itlMs: 15 })),
  );
  const urls = engines.map((e) => e.url);
  process.stdout.write(
    `No workers configured (--worker-urls): started two simulated vLLM engines for a demo at ${urls.join(', ')}.\n` +
      `Pass --worker-urls http://HOST:PORT ... to route to real engines.\n`,
  );
  return { urls, close: async () => void (await Promise.all(engines.map((e) => e.close()))) };
}

async function main(argv: string[]): Promise<number> {
  let resolved: ReturnType<typeof resolveConfig>;
  try {
    resolved = resolveConfig({ argv, env: environment(), readTextFile: (p) => readFileSync(p, 'utf8') });
    if (!resolved.help && !resolved.version) assertSupported(resolved.config);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`error: ${err.message}\n`);
      return err.exitCode;
    }
    throw err;
  }
  for (const warning of resolved.warnings) process.stderr.write(`warning: ${warning}\n`);
  if (resolved.help) {
    process.stdout.write(`${renderHelp()}\n`);
    return 0;
  }
  if (resolved.version) {
    process.stdout.write(`vllm-edge-router ${VERSION}\n`);
    return 0;
  }
  let config = resolved.config;
  if (resolved.checkConfig) {
    process.stdout.write(`${JSON.stringify(config, null, 2)}\n`);
    return 0;
  }

  let demo: Awaited<ReturnType<typeof startDemoEngines>> | undefined;
  if (config.workers.urls.length === 0 && !config.pd.enabled) {
    demo = await startDemoEngines();
    config = { ...config, workers: { ...config.workers, urls: demo.urls } };
  }

  // The global fetch as transport, for comparing transports (undici `request` is the default).
  const transport = process.env.VLLM_EDGE_ROUTER_TRANSPORT;
  const router = await startNodeRouter(config, transport === 'fetch' ? { upstream: fetchUpstream() } : {});
  router.logger.info(`vllm-edge-router listening on ${router.url}`, {
    transport: transport === 'fetch' ? 'fetch' : 'undici',
    workers: config.workers.urls.length,
    policy: config.policy.name,
    metrics: router.metricsUrl,
  });

  const stop = async (signal: string) => {
    router.logger.info(`${signal} received: draining (grace ${config.server.shutdownGraceSecs}s)`);
    await router.close();
    await demo?.close();
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
  return -1;
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exit(code);
  },
  (err: unknown) => {
    process.stderr.write(`fatal: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
