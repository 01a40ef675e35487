/**
 * Runs the router on Node: builds the dependencies (undici transport, system clock, in-memory fleet),
 * serves `app.fetch` with @hono/node-server, serves /metrics on the Prometheus listener, and stops
 * gracefully (stop accepting, let in-flight streams finish within the grace period, then close).
 */

import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import type { Context, Hono } from 'hono';
import type { RouterConfig } from '../../core/config/schema.ts';
import type { Clock, Random } from '../../core/contracts/runtime.ts';
import type { Upstream } from '../../core/contracts/upstream.ts';
import type { Fleet } from '../../core/fleet/fleet.ts';
import { metricsResponse } from '../../core/http/routes.ts';
import type { Logger, LogSink } from '../../core/observability/logger.ts';
import type { MetricsRegistry } from '../../core/observability/metrics.ts';
import { createRouter } from '../../core/router.ts';
import { batchedStdoutSink } from './log-sink.ts';
import { createUndiciUpstream } from './upstream.ts';

export interface NodeRouterOptions {
  upstream?: Upstream;
  clock?: Clock;
  random?: Random;
  logSink?: LogSink;
  /** Serve /metrics on --prometheus-host:--prometheus-port too (default true). */
  metricsListener?: boolean;
  /** Before serving, wait for a healthy worker (health checks on) or read models (off). Default true. */
  startup?: boolean;
  /** Run the health tick every --health-check-interval-secs (default true; tests call `healthTick`). */
  healthLoop?: boolean;
}

export interface NodeRouter {
  url: string;
  port: number;
  metricsUrl?: string;
  app: Hono;
  fleet: Fleet;
  logger: Logger;
  metrics: MetricsRegistry;
  /** Runs one health tick now. */
  healthTick(): Promise<void>;
  /** Stops accepting, waits up to `graceMs` for in-flight requests, then closes everything. */
  close(graceMs?: number): Promise<void>;
  /**
   * `close`, resolving true when the in-flight requests all finished, false when the grace period
   * ran out first (the rest were cut).
   */
  drain(graceMs?: number): Promise<boolean>;
}

type NodeServer = ReturnType<typeof serve> & {
  closeAllConnections?: () => void;
  closeIdleConnections?: () => void;
};

function listen(server: NodeServer): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    if (server.listening) {
      resolve(server.address() as AddressInfo);
      return;
    }
    server.once('listening', () => resolve(server.address() as AddressInfo));
    server.once('error', reject);
  });
}

/** Resolves true when every connection ended within `graceMs`, false when the rest were cut. */
function closeServer(server: NodeServer, graceMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    let drained = true;
    const timer = setTimeout(() => {
      drained = false;
      server.closeAllConnections?.();
    }, graceMs);
    // Keep-alive connections become idle as their last response ends: close them as they do.
    const sweep = setInterval(() => server.closeIdleConnections?.(), 100);
    server.close(() => {
      clearTimeout(timer);
      clearInterval(sweep);
      resolve(drained);
    });
    server.closeIdleConnections?.();
  });
}

/** @hono/node-server puts the Node request in c.env.incoming. */
export function nodePeerAddress(c: Context): string | undefined {
  return (c.env as { incoming?: IncomingMessage } | undefined)?.incoming?.socket?.remoteAddress;
}

function urlOf(host: string, port: number): string {
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

export async function startNodeRouter(
  config: RouterConfig,
  options: NodeRouterOptions = {},
): Promise<NodeRouter> {
  const ownedUpstream = options.upstream ? undefined : createUndiciUpstream();
  const upstream = options.upstream ?? (ownedUpstream as Upstream);
  const router = createRouter(config, {
    upstream,
    logSink: options.logSink ?? batchedStdoutSink(),
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.random ? { random: options.random } : {}),
    peerAddress: nodePeerAddress,
  });
  const { app, fleet, logger, metrics } = router;
  const sleep = (ms: number) => new Promise<void>((resolve) => router.clock.setTimeout(resolve, ms));
  if (options.startup ?? true) await router.start(sleep);
  let healthTimer: ReturnType<typeof setInterval> | undefined;
  if ((options.healthLoop ?? true) && !config.health.disabled) {
    healthTimer = setInterval(() => {
      router.healthTick().catch((err: unknown) => logger.error('health tick failed', { error: err }));
    }, config.health.intervalSecs * 1000);
    healthTimer.unref();
  }

  const server = serve({
    fetch: app.fetch,
    hostname: config.server.host,
    port: config.server.port,
  }) as NodeServer;
  const address = await listen(server);

  let metricsServer: NodeServer | undefined;
  let metricsUrl: string | undefined;
  if (options.metricsListener ?? true) {
    metricsServer = serve({
      fetch: () => metricsResponse(metrics),
      hostname: config.metrics.host,
      port: config.metrics.port,
    }) as NodeServer;
    const metricsAddress = await listen(metricsServer);
    metricsUrl = `${urlOf(config.metrics.host, metricsAddress.port)}/metrics`;
  }

  let closing: Promise<boolean> | undefined;
  const drain = (graceMs = config.server.shutdownGraceSecs * 1000) => {
    closing ??= (async () => {
      if (healthTimer) clearInterval(healthTimer);
      const [drained] = await Promise.all([
        closeServer(server, graceMs),
        metricsServer ? closeServer(metricsServer, 0) : Promise.resolve(true),
      ]);
      await ownedUpstream?.close();
      return drained;
    })();
    return closing;
  };
  return {
    url: urlOf(config.server.host, address.port),
    port: address.port,
    ...(metricsUrl === undefined ? {} : { metricsUrl }),
    app,
    fleet,
    logger,
    metrics,
    healthTick: () => router.healthTick(),
    close: async (graceMs) => void (await drain(graceMs)),
    drain,
  };
}
