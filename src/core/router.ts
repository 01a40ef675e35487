/**
 * Everything an adapter needs to run the router, built from a config: the in-memory fleet, the
 * metrics registry, the logger and the Hono app. Adapters supply the host parts (transport, clock,
 * random, log sink) and serve `app.fetch`.
 */
import type { Hono } from 'hono';
import { createRouterApp } from './app.ts';
import type { RouterConfig } from './config/schema.ts';
import { type Clock, type Random, systemClock, systemRandom, type Upstream } from './deps.ts';
import { discoverModels } from './fleet/discovery.ts';
import type { Fleet } from './fleet/fleet.ts';
import { createFleetFromConfig } from './fleet/from-config.ts';
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
  /** Reads each worker's models (`/v1/models`) before traffic is served. */
  discover(): Promise<void>;
}

export function createRouter(config: RouterConfig, host: RouterHost): Router {
  const clock = host.clock ?? systemClock;
  const random = host.random ?? systemRandom;
  const logger = createLogger({ ...config.log, sink: host.logSink, now: () => clock.now() });
  const metrics = new MetricsRegistry();
  const fleet = createFleetFromConfig(config, { clock, random, metrics });
  const app = createRouterApp(config, { clock, random, upstream: host.upstream, fleet, logger, metrics });
  return {
    app,
    fleet,
    logger,
    metrics,
    clock,
    discover: () =>
      discoverModels(fleet, host.upstream, {
        clock,
        timeoutMs: config.health.timeoutSecs * 1000,
        ...(config.workers.apiKey === undefined ? {} : { apiKey: config.workers.apiKey }),
      }),
  };
}
