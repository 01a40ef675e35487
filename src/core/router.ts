/**
 * The composition root: the one place a router is built from a config, for every runtime. Node and
 * Deno serve `createRouter(...)` with the in-memory fleet; the Cloudflare Durable Object builds the
 * same thing to hold the fleet (it never touches `app`); the Worker's isolates call `createRouterOn`
 * with a `FleetApi` that reaches that object by RPC. Adapters supply only the host parts (transport,
 * clock, random, log sink) and serve `app.fetch`.
 */
import type { Hono } from 'hono';
import type { RouterConfig } from './config/schema.ts';
import { assertSupported } from './config/unsupported.ts';
import type { FleetApi } from './contracts/fleet-api.ts';
import {
  type Clock,
  type Random,
  type Reports,
  systemClock,
  systemNewId,
  systemRandom,
} from './contracts/runtime.ts';
import type { SharedStore } from './contracts/shared-store.ts';
import type { Upstream } from './contracts/upstream.ts';
import type { Fleet } from './fleet/fleet.ts';
import { registerFleetCollector } from './fleet/fleet-collector.ts';
import type { FleetSharing } from './fleet/fleet-sharing.ts';
import { createFleetFromConfig } from './fleet/from-config.ts';
import { refreshWorkers, runHealthTick, waitForHealthyWorker } from './fleet/health-check.ts';
import { MooncakeBootstrap, warmUpBootstrap } from './fleet/mooncake-bootstrap.ts';
import { ProbeLog } from './fleet/probe-log.ts';
import type { ReplicaFleet } from './fleet/replica-fleet.ts';
import { SharedFleet } from './fleet/shared-fleet.ts';
import { StoreLink, type StoreStatus } from './fleet/store-link.ts';
import { createRouterApp, type RouterApp } from './http/app.ts';
import type { InboundHooks } from './http/inbound.ts';
import type { Inference } from './http/inference.ts';
import { type FleetEventHandler, FleetEvents } from './observability/fleet-events.ts';
import { createLogger, type Logger, type LogSink } from './observability/logger.ts';
import { MetricsRegistry } from './observability/metrics.ts';
import { Observations } from './observability/observations.ts';
import { pdConnector } from './routing/context.ts';
import { InFlight } from './routing/in-flight.ts';

export type { FleetEventHandler } from './observability/fleet-events.ts';

/** The host's parts; its request hooks (InboundHooks) tell what the Web `Request` does not. */
export interface RouterHost extends InboundHooks {
  upstream: Upstream;
  logSink: LogSink;
  clock?: Clock;
  random?: Random;
  /** Fresh request ids (default: the runtime's `crypto.randomUUID`), a source apart from `random`. */
  newId?: () => string;
  /** Defers finished requests' reports past the host's I/O turn (contracts/runtime.ts). */
  reports?: Reports;
  /** The registry metrics go to (default: a new one). */
  metrics?: MetricsRegistry;
  /** Told of every fleet event (worker up/down, breaker transitions) after it is logged. */
  onFleetEvent?: FleetEventHandler;
  /** Admin routes without --admin-api-key: loopback peers (Node, Deno; the default) or nobody (Workers). */
  adminWithoutKey?: 'loopback' | 'off';
  /** The admin Host rule against DNS rebinding (default on; Workers turn it off). */
  adminHostCheck?: boolean;
  /**
   * P2P-NCCL worker registration (--vllm-discovery-address), when the runtime offers it (Node): the
   * ZMQ address each registered worker gave, by its HTTP URL.
   */
  p2pRegistry?: { zmqAddress(url: string): string | undefined };
  /** The host runs Kubernetes service discovery (--service-discovery; Node) next to this router. */
  kubernetesDiscovery?: boolean;
  /** The host can share the fleet through --state-store (Node, Deno). */
  stateStore?: boolean;
}

function runtimeFeatures(host: RouterHost) {
  return {
    p2pRegistration: host.p2pRegistry !== undefined,
    kubernetesDiscovery: host.kubernetesDiscovery === true,
    stateStore: host.stateStore === true,
  };
}

export interface Router<F extends FleetApi = Fleet> {
  config: RouterConfig;
  /** The HTTP surface, built on first use (a Durable Object holding the fleet never builds it). */
  readonly app: Hono;
  /** The inference routes for a host serving them itself (RouterApp.direct), built with the app. */
  readonly direct: Inference | undefined;
  fleet: F;
  logger: Logger;
  metrics: MetricsRegistry;
  clock: Clock;
  /** Told of every finished request (the live fleet page's statistics, for one). */
  observations: Observations;
  /**
   * The startup round, while the router already serves (/readiness 503 until a worker is healthy):
   * with health checks on, probe until a worker is healthy (up to --worker-startup-timeout-secs;
   * `sleep` waits between rounds; a timeout is logged, not thrown); with them off, read each
   * worker's models once. `signal` stops the wait (shutdown). Resolves true when a worker is healthy.
   */
  start(sleep: (ms: number) => Promise<void>, signal?: AbortSignal): Promise<boolean>;
  /** Health on: one health tick (the host runs it every --health-check-interval-secs). Off: nothing. */
  healthTick(): Promise<void>;
  /** Health tick with checks on, models lookup with them off (`only`: some base URLs). */
  refreshWorkers(only?: readonly string[]): Promise<void>;
  /** Shutdown began: /readiness answers 503 from now on (requests are still served). */
  beginDrain(): void;
  readonly draining: boolean;
  /**
   * The grace period is over: every request still running is cut. A stream being relayed gets a
   * final SSE error event of type `shutdown` (no `[DONE]`), a request not answered yet a 503
   * `shutdown` error; both are logged with `error: "shutdown"`. Idempotent. (Node and Deno; a
   * router of the Workers isolates, `createRouterOn`, cuts nothing.)
   */
  shutdown(): void;
}

/** The in-memory fleet the config describes, with its logger and metrics. */
function localFleet(config: RouterConfig, host: RouterHost, sharing?: FleetSharing) {
  assertSupported(config, runtimeFeatures(host));
  const clock = host.clock ?? systemClock;
  const metrics = host.metrics ?? new MetricsRegistry();
  const logger = createLogger({ ...config.log, sink: host.logSink, now: () => clock.now() });
  const fleetEvents = new FleetEvents(host.onFleetEvent);
  const fleet = createFleetFromConfig(config, {
    clock,
    random: host.random ?? systemRandom,
    metrics,
    onEvent: (level, message, fields) => {
      logger.log(level, message, fields);
      fleetEvents.emit(level, message, fields);
    },
    ...(sharing ? { sharing } : {}),
  });
  registerFleetCollector(metrics, fleet);
  return { fleet, logger, host: { ...host, clock, metrics, fleetEvents } };
}

/** A router around the in-memory fleet the config describes (Node, Deno, the Durable Object). */
export function createRouter(config: RouterConfig, host: RouterHost): Router<Fleet> {
  const local = localFleet(config, host);
  // Node and Deno cut requests at shutdown. (Only they build `app` from this router: on Workers a
  // request's I/O cannot be aborted from another request, and isolates do not shut down.)
  return assemble(config, local.host, local.fleet, local.logger, new InFlight(local.host.clock));
}

/**
 * A router replica sharing its fleet with others through `store` (--state-store; Node, Deno):
 * its `start` first connects to the store (shared-fleet.ts), then runs the startup round; `close`
 * stops the sync and the store connection.
 */
export function createReplicaRouter(
  config: RouterConfig,
  host: RouterHost,
  store: SharedStore,
): Router<SharedFleet> & { close(): Promise<void> } {
  let shared: SharedFleet | undefined;
  const local = localFleet(
    config,
    host,
    SharedFleet.sharingFor(() => shared),
  );
  const link = new StoreLink(store, local.host.clock, local.logger, local.host.metrics);
  shared = new SharedFleet(local.fleet as ReplicaFleet, link, {
    clock: local.host.clock,
    sessionTtlMs: config.sll.sessionExpirationSecs * 1000,
  });
  const fleet = shared;
  const router = assemble(config, local.host, fleet, local.logger, new InFlight(local.host.clock), () =>
    link.status(),
  );
  const start = router.start;
  return Object.assign(router, {
    start: async (sleep: (ms: number) => Promise<void>, signal?: AbortSignal) => {
      await fleet.sync.start();
      return start(sleep, signal);
    },
    close: async () => {
      fleet.sync.stop();
      await store.close();
    },
  });
}

/** Mooncake's bootstrap lookup, when the config runs Mooncake. */
function mooncakeBootstrap(config: RouterConfig, host: RouterHost & { clock: Clock }, logger: Logger) {
  if (!config.pd.enabled || pdConnector(config) !== 'mooncake') return undefined;
  return new MooncakeBootstrap({
    upstream: host.upstream,
    clock: host.clock,
    timeoutMs: config.pd.bootstrapTimeoutSecs * 1000,
    onEvent: (level, message, fields) => logger.log(level, message, fields),
  });
}

/** A router around a fleet held elsewhere (the Worker's isolates: the Durable Object by RPC). */
export function createRouterOn<F extends FleetApi>(
  config: RouterConfig,
  host: RouterHost,
  fleet: F,
): Router<F> {
  assertSupported(config, runtimeFeatures(host));
  const clock = host.clock ?? systemClock;
  const logger = createLogger({ ...config.log, sink: host.logSink, now: () => clock.now() });
  return assemble(config, { ...host, clock, metrics: host.metrics ?? new MetricsRegistry() }, fleet, logger);
}

function assemble<F extends FleetApi>(
  config: RouterConfig,
  host: RouterHost & { clock: Clock; metrics: MetricsRegistry; fleetEvents?: FleetEvents },
  fleet: F,
  logger: Logger,
  inFlight?: InFlight,
  storeStatus?: () => StoreStatus,
): Router<F> {
  const { clock, metrics, upstream } = host;
  const tickDeps = { fleet, upstream, clock, config, probeLog: new ProbeLog(logger) };
  const bootstrap = mooncakeBootstrap(config, host, logger);
  const pd = {
    ...(bootstrap ? { bootstrap } : {}),
    ...(host.p2pRegistry ? { zmqAddress: (url: string) => host.p2pRegistry?.zmqAddress(url) } : {}),
  };
  const refresh = (only?: readonly string[]) => refreshWorkers(tickDeps, only);
  const observations = new Observations();
  let built: RouterApp | undefined;
  let draining = false;
  const build = () =>
    (built ??= createRouterApp(
      config,
      {
        clock,
        random: host.random ?? systemRandom,
        newId: host.newId ?? systemNewId,
        upstream,
        fleet,
        logger,
        metrics,
        pd,
        observations,
        ...(inFlight ? { inFlight } : {}),
        ...(host.reports ? { reports: host.reports } : {}),
      },
      {
        refreshWorkers: refresh,
        draining: () => draining,
        fleetEvents: host.fleetEvents,
        ...(host.peerAddress ? { peerAddress: host.peerAddress } : {}),
        ...(host.requestHeaders ? { requestHeaders: host.requestHeaders } : {}),
        ...(host.clientLink ? { clientLink: host.clientLink } : {}),
        ...(host.adminWithoutKey ? { adminWithoutKey: host.adminWithoutKey } : {}),
        ...(host.adminHostCheck === false ? { adminHostCheck: false } : {}),
        ...(storeStatus ? { storeStatus } : {}),
      },
    ));
  return {
    config,
    get app() {
      return build().app;
    },
    get direct() {
      return build().direct;
    },
    fleet,
    logger,
    metrics,
    clock,
    observations,
    async start(sleep, signal) {
      const warm = bootstrap ? warmUpBootstrap(bootstrap, fleet, sleep, signal) : undefined;
      let healthy: boolean;
      if (!config.health.disabled) {
        healthy = await waitForHealthyWorker({ ...tickDeps, logger, sleep, ...(signal ? { signal } : {}) });
      } else {
        await refresh();
        healthy = (await fleet.listWorkers()).some((w) => w.healthy);
      }
      await warm;
      return healthy;
    },
    async healthTick() {
      if (!config.health.disabled) await runHealthTick(tickDeps);
      // Prefill workers not known to their bootstrap server yet (new ones, or it was down).
      if (bootstrap) await bootstrap.refresh(await fleet.listWorkers());
    },
    refreshWorkers: refresh,
    beginDrain() {
      draining = true;
    },
    get draining() {
      return draining;
    },
    shutdown() {
      draining = true;
      inFlight?.stop();
    },
  };
}
