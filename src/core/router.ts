/**
 * Everything an adapter needs to run the router, built from a config: the in-memory fleet, the
 * metrics registry, the logger and the Hono app. Adapters supply the host parts (transport, clock,
 * random, log sink) and serve `app.fetch`.
 */
import type { Hono } from 'hono';
import { createRouterApp } from './app.ts';
import type { RouterConfig } from './config/schema.ts';
import { assertSupported } from './config/unsupported.ts';
import { type Clock, type Random, systemClock, systemRandom, type Upstream } from './deps.ts';
import { discoverModels } from './fleet/discovery.ts';
import type { Fleet } from './fleet/fleet.ts';
import { createFleetFromConfig } from './fleet/from-config.ts';
import { runHealthTick, waitForHealthyWorker } from './fleet/health-check.ts';
import { createLogger, type Logger, type LogSink } from './observability/logger.ts';
import { MetricsRegistry } from './observability/metrics.ts';

export interface RouterHost {
  upstream: Upstream;
  logSink: LogSink;
  clock?: Clock;
  random?: Random;
}

export interface Router {
  app: Hono;
  fleet: Fleet;
  logger: Logger;
  metrics: MetricsRegistry;
  clock: Clock;
  /**
   * Before traffic: with health checks on, probe until a worker is healthy (up to
   * --worker-startup-timeout-secs; `sleep` waits between rounds); with them off, read each
   * worker's models once.
   */
  start(sleep: (ms: number) => Promise<void>): Promise<void>;
  /** One health tick (the adapter runs it every --health-check-interval-secs). */
  healthTick(): Promise<void>;
}

export function createRouter(config: RouterConfig, host: RouterHost): Router {
  assertSupported(config);
  const clock = host.clock ?? systemClock;
  const random = host.random ?? systemRandom;
  const logger = createLogger({ ...config.log, sink: host.logSink, now: () => clock.now() });
  const metrics = new MetricsRegistry();
  const fleet = createFleetFromConfig(config, {
    clock,
    random,
    metrics,
    onEvent: (level, message, fields) => logger.log(level, message, fields),
  });
  const tickDeps = { fleet, upstream: host.upstream, clock, config };
  const app = createRouterApp(config, { clock, random, upstream: host.upstream, fleet, logger, metrics });

  return {
    app,
    fleet,
    logger,
    metrics,
    clock,
    async start(sleep) {
      if (!config.health.disabled) {
        await waitForHealthyWorker({ ...tickDeps, logger, sleep });
        return;
      }
      await discoverModels(fleet, host.upstream, {
        clock,
        timeoutMs: config.health.timeoutSecs * 1000,
        ...(config.workers.apiKey === undefined ? {} : { apiKey: config.workers.apiKey }),
      });
    },
    async healthTick() {
      if (!config.health.disabled) await runHealthTick(tickDeps);
    },
  };
}
