/**
 * The composition root: the one place a router is built from a config, for every runtime. Node and
 * Deno serve `createRouter(...)` with the in-memory fleet; the Cloudflare Durable Object builds the
 * same thing to hold the fleet (it never touches `app`); the Worker's isolates call `createRouterOn`
 * with a `FleetApi` that reaches that object by RPC. Adapters supply only the host parts (transport,
 * clock, random, log sink) and serve `app.fetch`.
 */
import type { Context, Hono } from 'hono';
import type { RouterConfig } from './config/schema.ts';
import { assertSupported } from './config/unsupported.ts';
import type { FleetApi } from './contracts/fleet-api.ts';
import { type Clock, type Random, systemClock, systemNewId, systemRandom } from './contracts/runtime.ts';
import type { Upstream } from './contracts/upstream.ts';
import type { Fleet } from './fleet/fleet.ts';
import { registerFleetCollector } from './fleet/fleet-collector.ts';
import { createFleetFromConfig } from './fleet/from-config.ts';
import { refreshWorkers, runHealthTick, waitForHealthyWorker } from './fleet/health-check.ts';
import { createRouterApp } from './http/app.ts';
import { createLogger, type Logger, type LogSink } from './observability/logger.ts';
import { MetricsRegistry } from './observability/metrics.ts';

export type FleetEventHandler = (
  level: 'info' | 'warn',
  message: string,
  fields: Record<string, unknown>,
) => void;

export interface RouterHost {
  upstream: Upstream;
  logSink: LogSink;
  clock?: Clock;
  random?: Random;
  /** Fresh request ids (default: the runtime's `crypto.randomUUID`), a source apart from `random`. */
  newId?: () => string;
  /** The registry metrics go to (default: a new one). */
  metrics?: MetricsRegistry;
  /** Told of every fleet event (worker up/down, breaker transitions) after it is logged. */
  onFleetEvent?: FleetEventHandler;
  /** The peer's IP address for a request (Node, Deno); Workers do not know it. */
  peerAddress?: (c: Context) => string | undefined;
  /** Admin routes without --admin-api-key: loopback peers (Node, Deno; the default) or nobody (Workers). */
  adminWithoutKey?: 'loopback' | 'off';
}

export interface Router<F extends FleetApi = Fleet> {
  config: RouterConfig;
  /** The HTTP surface, built on first use (a Durable Object holding the fleet never builds it). */
  readonly app: Hono;
  fleet: F;
  logger: Logger;
  metrics: MetricsRegistry;
  clock: Clock;
  /**
   * Before traffic: with health checks on, probe until a worker is healthy (up to
   * --worker-startup-timeout-secs; `sleep` waits between rounds); with them off, read each
   * worker's models once.
   */
  start(sleep: (ms: number) => Promise<void>): Promise<void>;
  /** Health on: one health tick (the host runs it every --health-check-interval-secs). Off: nothing. */
  healthTick(): Promise<void>;
  /** Health tick with checks on, models lookup with them off (`only`: some base URLs). */
  refreshWorkers(only?: readonly string[]): Promise<void>;
  /** Shutdown began: /readiness answers 503 from now on (requests are still served). */
  beginDrain(): void;
  readonly draining: boolean;
}

/** A router around the in-memory fleet the config describes (Node, Deno, the Durable Object). */
export function createRouter(config: RouterConfig, host: RouterHost): Router<Fleet> {
  assertSupported(config);
  const clock = host.clock ?? systemClock;
  const metrics = host.metrics ?? new MetricsRegistry();
  const logger = createLogger({ ...config.log, sink: host.logSink, now: () => clock.now() });
  const fleet = createFleetFromConfig(config, {
    clock,
    random: host.random ?? systemRandom,
    metrics,
    onEvent: (level, message, fields) => {
      logger.log(level, message, fields);
      host.onFleetEvent?.(level, message, fields);
    },
  });
  registerFleetCollector(metrics, fleet);
  return assemble(config, { ...host, clock, metrics }, fleet, logger);
}

/** A router around a fleet held elsewhere (the Worker's isolates: the Durable Object by RPC). */
export function createRouterOn<F extends FleetApi>(
  config: RouterConfig,
  host: RouterHost,
  fleet: F,
): Router<F> {
  assertSupported(config);
  const clock = host.clock ?? systemClock;
  const logger = createLogger({ ...config.log, sink: host.logSink, now: () => clock.now() });
  return assemble(config, { ...host, clock, metrics: host.metrics ?? new MetricsRegistry() }, fleet, logger);
}

function assemble<F extends FleetApi>(
  config: RouterConfig,
  host: RouterHost & { clock: Clock; metrics: MetricsRegistry },
  fleet: F,
  logger: Logger,
): Router<F> {
  const { clock, metrics, upstream } = host;
  const tickDeps = { fleet, upstream, clock, config };
  const refresh = (only?: readonly string[]) => refreshWorkers(tickDeps, only);
  let app: Hono | undefined;
  let draining = false;
  return {
    config,
    get app() {
      app ??= createRouterApp(
        config,
        {
          clock,
          random: host.random ?? systemRandom,
          newId: host.newId ?? systemNewId,
          upstream,
          fleet,
          logger,
          metrics,
        },
        {
          refreshWorkers: refresh,
          draining: () => draining,
          ...(host.peerAddress ? { peerAddress: host.peerAddress } : {}),
          ...(host.adminWithoutKey ? { adminWithoutKey: host.adminWithoutKey } : {}),
        },
      );
      return app;
    },
    fleet,
    logger,
    metrics,
    clock,
    async start(sleep) {
      if (config.health.disabled) await refresh();
      else await waitForHealthyWorker({ ...tickDeps, logger, sleep });
    },
    async healthTick() {
      if (!config.health.disabled) await runHealthTick(tickDeps);
    },
    refreshWorkers: refresh,
    beginDrain() {
      draining = true;
    },
    get draining() {
      return draining;
    },
  };
}
