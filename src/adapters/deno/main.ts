/**
 * `vllm-edge-router` on Deno: parse flags, environment (.env) and config file; with no workers
 * configured, start two simulated engines in-process (the demo); serve; drain on SIGTERM/SIGINT.
 *
 *   deno run --allow-net --allow-env --allow-read src/adapters/deno/main.ts [flags]
 *
 * The same flags as `npm start` (the core's parser). Deno-only APIs live in this folder.
 */
import pkg from '../../../package.json' with { type: 'json' };
import { parseDotEnv } from '../../core/config/dotenv.ts';
import { ConfigError } from '../../core/config/errors.ts';
import { renderHelp } from '../../core/config/help.ts';
import { type ResolvedConfig, resolveConfig } from '../../core/config/load.ts';
import { assertSupported } from '../../core/config/unsupported.ts';
import { createSimEngine } from '../../sim/engine.ts';
import { batchedStdoutSink } from './log-sink.ts';
import { serveOn, startDenoRouter, urlOf } from './server.ts';

/** `.env` in the working directory, if there is one and we may read it. */
function readDotEnv(): Record<string, string> {
  try {
    return parseDotEnv(Deno.readTextFileSync('.env'));
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return {};
    if (err instanceof Deno.errors.NotCapable || err instanceof Deno.errors.PermissionDenied) {
      console.error('warning: .env not read: no read permission (run with --allow-read=.env)');
      return {};
    }
    throw err;
  }
}

function environment(): Record<string, string | undefined> {
  return { ...readDotEnv(), ...Deno.env.toObject() };
}

/** Two simulated vLLM engines served with `Deno.serve` on loopback; they live as long as the process. */
function startDemoEngines(): string[] {
  const urls = ['sim-a', 'sim-b'].map((id) => {
    const engine = createSimEngine({ id, ttftMs: 30, itlMs: 15 });
    const server = serveOn('127.0.0.1', 0, engine.fetch);
    return urlOf('127.0.0.1', server.addr.port);
  });
  console.log(
    `No workers configured (--worker-urls): started two simulated vLLM engines for a demo at ${urls.join(', ')}.\n` +
      `Pass --worker-urls http://HOST:PORT ... to route to real engines.`,
  );
  return urls;
}

/** Exit code, or undefined when the router is serving (it exits from its signal handler). */
async function main(argv: string[]): Promise<number | undefined> {
  let resolved: ResolvedConfig;
  try {
    resolved = resolveConfig({ argv, env: environment(), readTextFile: (p) => Deno.readTextFileSync(p) });
    if (!resolved.help && !resolved.version) assertSupported(resolved.config);
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(`error: ${err.message}`);
      return err.exitCode;
    }
    throw err;
  }
  for (const warning of resolved.warnings) console.error(`warning: ${warning}`);
  if (resolved.help) {
    console.log(renderHelp());
    return 0;
  }
  if (resolved.version) {
    console.log(`vllm-edge-router ${pkg.version}`);
    return 0;
  }
  let config = resolved.config;
  if (resolved.checkConfig) {
    console.log(JSON.stringify(config, null, 2));
    return 0;
  }

  if (config.workers.urls.length === 0 && !config.pd.enabled) {
    config = { ...config, workers: { ...config.workers, urls: startDemoEngines() } };
  }

  const log = batchedStdoutSink();
  const router = await startDenoRouter(config, { logSink: log.sink });
  router.logger.info(`vllm-edge-router listening on ${router.url}`, {
    runtime: `deno ${Deno.version.deno}`,
    transport: 'fetch',
    workers: config.workers.urls.length,
    policy: config.policy.name,
    metrics: router.metricsUrl,
  });

  let draining = false;
  const stop = async (signal: Deno.Signal) => {
    if (draining) {
      // A second signal: stop waiting.
      log.flush();
      Deno.exit(signal === 'SIGINT' ? 130 : 143);
    }
    draining = true;
    router.logger.info(`${signal} received: draining (grace ${config.server.shutdownGraceSecs}s)`);
    if (!(await router.close()))
      router.logger.warn('grace period over: exiting with requests still in flight');
    log.flush();
    Deno.exit(0);
  };
  const signals: Deno.Signal[] = Deno.build.os === 'windows' ? ['SIGINT'] : ['SIGTERM', 'SIGINT'];
  for (const signal of signals) Deno.addSignalListener(signal, () => void stop(signal));
  return undefined;
}

main(Deno.args).then(
  (code) => {
    if (code !== undefined) Deno.exit(code);
  },
  (err: unknown) => {
    console.error(`fatal: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    Deno.exit(1);
  },
);
