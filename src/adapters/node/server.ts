/**
 * Runs the router on Node: builds the dependencies (undici transport, system clock, in-memory fleet),
 * binds its listeners first (the router, /metrics on the Prometheus listener, the probes on
 * --health-check-port), then runs the startup probing behind them (/readiness answers 503 until a
 * worker is healthy) and the health loop, and stops in steps the command sequences: readiness 503
 * (`beginDrain`), no new connections (`stopAccepting`), and the cut after the grace period
 * (`shutdown`: streams still running get the `shutdown` SSE event, then every connection closes).
 */

import type { Hono } from 'hono';
import type { RouterConfig } from '../../core/config/schema.ts';
import { errorResponse, RouterError } from '../../core/contracts/errors.ts';
import type { FleetApi } from '../../core/contracts/fleet-api.ts';
import { type Clock, type Random, systemClock } from '../../core/contracts/runtime.ts';
import type { Upstream } from '../../core/contracts/upstream.ts';
import type { Fleet } from '../../core/fleet/fleet.ts';
import { metricsResponse } from '../../core/http/routes.ts';
import type { Logger, LogSink } from '../../core/observability/logger.ts';
import type { MetricsRegistry } from '../../core/observability/metrics.ts';
import type { Router } from '../../core/router.ts';
import { type P2pRegistryOptions, p2pRegistryFor } from '../p2p/registry.ts';
import { openHostRouter } from '../redis/replica-router.ts';
import { createUndiciUpstream } from '../undici/upstream.ts';
import { nodeInboundHooks } from './incoming.ts';
import {
  type KubernetesDiscovery,
  type KubernetesDiscoveryOptions,
  kubernetesDiscoveryFor,
} from './k8s-discovery.ts';
import {
  applyKeepAlive,
  closeGracefully,
  closeNow,
  createNodeServer,
  listenOn,
  type NodeServer,
  urlOf,
} from './listen.ts';
import { batchedStdoutSink, type StdoutLog } from './log-sink.ts';
import { registerNodeRuntimeMetrics } from './runtime-metrics.ts';
import { turnReports } from './turn-reports.ts';

export interface NodeRouterOptions {
  upstream?: Upstream;
  clock?: Clock;
  random?: Random;
  logSink?: LogSink;
  /** Serve /metrics on --prometheus-host:--prometheus-port too (default true). */
  metricsListener?: boolean;
  /**
   * The startup round (probe until a worker is healthy; read models with checks off), always after
   * the listeners are up: `wait` (default; also `true`) resolves `startNodeRouter` once it is done,
   * `background` (the command) at once, `skip` (also `false`) runs none.
   */
  startup?: 'wait' | 'background' | 'skip' | boolean;
  /** Run the health tick every --health-check-interval-secs (default true; tests call `healthTick`). */
  healthLoop?: boolean;
  /** P2P-NCCL registration timings (--vllm-discovery-address; tests shorten the 5 s expiry). */
  p2p?: Pick<P2pRegistryOptions, 'expiryMs' | 'sweepMs'>;
  /** Kubernetes discovery (--service-discovery): pod sources and backoff (tests). */
  k8s?: KubernetesDiscoveryOptions;
}

export interface NodeRouter {
  url: string;
  port: number;
  metricsUrl?: string;
  /** The probes listener (--health-check-port), when configured. */
  healthUrl?: string;
  /** The P2P-NCCL registration socket's address (`HOST:PORT`), with --vllm-discovery-address. */
  p2pAddress?: string;
  /** Kubernetes discovery (--service-discovery): `synced()` resolves once its pods were listed. */
  discovery?: KubernetesDiscovery;
  app: Hono;
  fleet: Fleet;
  logger: Logger;
  metrics: MetricsRegistry;
  /** Resolves when the startup round is over: true when a worker is healthy. */
  ready: Promise<boolean>;
  /** Runs one health tick now. */
  healthTick(): Promise<void>;
  /** /readiness answers 503 from now on; requests are still served. */
  beginDrain(): void;
  /** Closes the listeners; resolves once every request in flight has finished. */
  stopAccepting(): Promise<void>;
  /** Cuts what is still in flight (streams get the shutdown event), closes every connection. */
  shutdown(): Promise<void>;
  /** `drain`, ignoring the result. */
  close(graceMs?: number): Promise<void>;
  /**
   * Stops accepting and waits up to `graceMs` for the requests in flight, then cuts the rest.
   * Resolves true when they all finished, false when the grace period ran out first.
   */
  drain(graceMs?: number): Promise<boolean>;
}

/** After the cut, how long streams get to send their shutdown event before connections are closed. */
const CUT_FLUSH_MS = 1000;

const PROBES = new Set(['/health', '/liveness', '/readiness']);

/** Resolves true when `work` ends within `ms`, false otherwise. */
async function within(work: Promise<unknown>, ms: number): Promise<boolean> {
  let handle: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<false>((resolve) => {
    handle = setTimeout(() => resolve(false), ms);
  });
  const inTime = await Promise.race([work.then(() => true as const), late]);
  clearTimeout(handle);
  return inTime;
}

interface Listeners {
  server: NodeServer;
  port: number;
  metrics?: { server: NodeServer; url: string };
  health?: { server: NodeServer; url: string };
}

/** Binds every listener, or none: one that cannot bind closes those already bound. */
async function bindAll(config: RouterConfig, app: Hono, router: Router<FleetApi>, withMetrics: boolean) {
  const bound: NodeServer[] = [];
  const bind = async (server: NodeServer, target: Parameters<typeof listenOn>[1]) => {
    bound.push(server);
    const address = await listenOn(server, target);
    return { server, port: address.port, url: urlOf(target.host, address.port) };
  };
  try {
    const main = createNodeServer(app.fetch, config.server.host, router.direct);
    applyKeepAlive(main, config.server.keepAliveTimeoutSecs);
    const { host, port } = config.server;
    const listeners: Listeners = (({ server, port }) => ({ server, port }))(
      await bind(main, { portFlag: '--port', hostFlag: '--host', host, port }),
    );
    if (withMetrics) {
      const { host, port } = config.metrics;
      const m = await bind(
        createNodeServer(() => metricsResponse(router.metrics), host),
        {
          portFlag: '--prometheus-port',
          hostFlag: '--prometheus-host',
          host,
          port,
        },
      );
      listeners.metrics = { server: m.server, url: `${m.url}/metrics` };
    }
    if (config.health.port !== undefined) {
      const probes = (req: Request, env: unknown) =>
        PROBES.has(new URL(req.url).pathname)
          ? app.fetch(req, env)
          : errorResponse(new RouterError('not_found', 'this port serves /health, /liveness and /readiness'));
      const h = await bind(createNodeServer(probes, host), {
        portFlag: '--health-check-port',
        hostFlag: '--host',
        host,
        port: config.health.port,
      });
      listeners.health = { server: h.server, url: h.url };
    }
    return listeners;
  } catch (err) {
    await Promise.all(bound.map(closeNow));
    throw err;
  }
}

/**
 * The startup round behind the listeners, then the health loop. Stopped by `stopping` (its sleeps
 * end at once); resolves true when a worker is healthy.
 */
function runStartup(router: Router<FleetApi>, options: NodeRouterOptions, stopping: AbortSignal) {
  const { config, logger } = router;
  let healthTimer: ReturnType<typeof setInterval> | undefined;
  const startHealthLoop = () => {
    if (!(options.healthLoop ?? true) || config.health.disabled || stopping.aborted) return;
    healthTimer = setInterval(() => {
      router.healthTick().catch((err: unknown) => logger.error('health tick failed', { error: err }));
    }, config.health.intervalSecs * 1000);
    healthTimer.unref();
  };
  stopping.addEventListener('abort', () => clearInterval(healthTimer), { once: true });
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const wake = () => {
        router.clock.clearTimeout(handle);
        resolve();
      };
      const handle = router.clock.setTimeout(() => {
        stopping.removeEventListener('abort', wake);
        resolve();
      }, ms);
      stopping.addEventListener('abort', wake, { once: true });
    });
  const skip = options.startup === 'skip' || options.startup === false;
  const ready = skip
    ? Promise.resolve(false)
    : router.start(sleep, stopping).catch((err: unknown) => {
        logger.error('startup probing failed', { error: err });
        return false;
      });
  void ready.then(startHealthLoop);
  return ready;
}

export async function startNodeRouter(
  config: RouterConfig,
  options: NodeRouterOptions = {},
): Promise<NodeRouter> {
  const discovery = await kubernetesDiscoveryFor(config, options.clock ?? systemClock, options.k8s);
  const ownedUpstream = options.upstream ? undefined : createUndiciUpstream();
  let upstreamClosed: Promise<void> | undefined;
  const closeUpstream = () => (upstreamClosed ??= ownedUpstream?.close() ?? Promise.resolve());
  const p2p = p2pRegistryFor(config, options.p2p);
  const stdoutLog = options.logSink ? undefined : batchedStdoutSink();
  const reports = turnReports((err) => opened.router.logger.error('request report failed', { error: err }));
  const opened = await openHostRouter(config, {
    upstream: options.upstream ?? (ownedUpstream as Upstream),
    logSink: options.logSink ?? (stdoutLog as StdoutLog).sink,
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.random ? { random: options.random } : {}),
    ...nodeInboundHooks,
    reports,
    ...(p2p ? { p2pRegistry: p2p } : {}),
    ...(discovery ? { kubernetesDiscovery: true } : {}),
    stateStore: true,
  });
  const { router, fleet } = opened;
  const { app, logger, metrics } = router;
  stdoutLog?.reportToRouter(router);
  let listeners: Listeners;
  try {
    p2p?.attach(router);
    if (p2p) await p2p.bind(config.pd.discoveryAddress as string);
    listeners = await bindAll(config, app, router, options.metricsListener ?? true);
  } catch (err) {
    await p2p?.close();
    await closeUpstream();
    await opened.close();
    throw err;
  }
  const stopRuntimeMetrics = registerNodeRuntimeMetrics(metrics, listeners.server);
  discovery?.start(router);
  const others = [listeners.metrics?.server, listeners.health?.server].filter((s) => s !== undefined);
  const stopping = new AbortController();
  const ready = runStartup(router, options, stopping.signal);
  if (options.startup === undefined || options.startup === 'wait' || options.startup === true) await ready;

  let closing: Promise<void> | undefined;
  const stopAccepting = () => {
    stopping.abort();
    stopRuntimeMetrics();
    closing ??= Promise.all([
      closeGracefully(listeners.server),
      ...others.map(closeNow),
      p2p?.close(),
      discovery?.stop(),
    ]).then(() => {});
    return closing;
  };
  let cutting: Promise<void> | undefined;
  const shutdown = () => {
    cutting ??= (async () => {
      router.shutdown();
      const closed = stopAccepting();
      if (!(await within(closed, CUT_FLUSH_MS))) listeners.server.closeAllConnections?.();
      await closed;
      await closeUpstream();
      await opened.close();
    })();
    return cutting;
  };
  const drain = async (graceMs = config.server.shutdownGraceSecs * 1000) => {
    const finished = await within(stopAccepting(), graceMs);
    if (finished) await Promise.all([closeUpstream(), opened.close()]);
    else await shutdown();
    return finished;
  };
  return {
    url: urlOf(config.server.host, listeners.port),
    port: listeners.port,
    ...(listeners.metrics ? { metricsUrl: listeners.metrics.url } : {}),
    ...(listeners.health ? { healthUrl: listeners.health.url } : {}),
    ...(p2p?.address ? { p2pAddress: p2p.address } : {}),
    ...(discovery ? { discovery } : {}),
    app,
    fleet,
    logger,
    metrics,
    ready,
    healthTick: () => router.healthTick(),
    beginDrain: () => router.beginDrain(),
    stopAccepting,
    shutdown,
    close: async (graceMs) => void (await drain(graceMs)),
    drain,
  };
}
