/**
 * Runs the router on Deno: builds the dependencies (undici's dispatch API as transport, as on Node:
 * on Deno it costs about a quarter less CPU per request than Deno's own `fetch`; system clock,
 * in-memory fleet), binds its listeners first (`Deno.serve`: the router, /metrics on the Prometheus
 * listener, the probes on --health-check-port), then probes the workers behind them (/readiness
 * answers 503 until one is healthy) and runs the health tick on an interval. It stops in the
 * command's steps: readiness 503 (`beginDrain`), no new connections (`stopAccepting`), the cut
 * after the grace period (`shutdown`: streams still running get the `shutdown` SSE event).
 *
 * Inbound keep-alive: `Deno.serve` has no setting for it (no idle timeout to set, no `Keep-Alive`
 * header), so --keep-alive-timeout-secs does not apply on Deno (the listening line says so). Deno
 * (2.9) keeps an idle client connection open until the client closes it, so the load balancer's
 * idle timeout always ends it first; connections still open at shutdown close with the server.
 *
 * P2P-NCCL registration (--vllm-discovery-address) binds its ZMQ socket before the listeners
 * (`openDenoRouter`). The zeromq native addon needs Deno permissions a router without it does not:
 * a missing one is the startup error (exit 2) that names them.
 */
import { type ListenProblem, type ListenTarget, listenError } from '../../core/cli.ts';
import type { RouterConfig } from '../../core/config/schema.ts';
import { errorResponse, RouterError } from '../../core/contracts/errors.ts';
import type { FleetApi } from '../../core/contracts/fleet-api.ts';
import type { Upstream } from '../../core/contracts/upstream.ts';
import { metricsResponse } from '../../core/http/routes.ts';
import type { Logger, LogSink } from '../../core/observability/logger.ts';
import type { Router } from '../../core/router.ts';
import { fetchUpstream } from '../../core/upstream/fetch-upstream.ts';
import { type P2pRegistry, p2pRegistryFor } from '../p2p/registry.ts';
import { type HostRouter, openHostRouter } from '../redis/replica-router.ts';
import { createUndiciUpstream } from '../undici/upstream.ts';
import { directHandler } from './direct.ts';
import { bindP2p } from './p2p-permissions.ts';
import { registerDenoRuntimeMetrics } from './runtime-metrics.ts';

export interface DenoRouter {
  router: Router<FleetApi>;
  logger: Logger;
  url: string;
  port: number;
  metricsUrl: string;
  healthUrl?: string;
  /** The P2P-NCCL registration socket's address (`HOST:PORT`), with --vllm-discovery-address. */
  p2pAddress?: string;
  /** Resolves when the startup round is over: true when a worker is healthy. */
  ready: Promise<boolean>;
  beginDrain(): void;
  /** Closes the listeners; resolves once every request in flight has finished. */
  stopAccepting(): Promise<void>;
  /** Cuts what is still in flight (streams get the shutdown event); resolves when the server is closed. */
  shutdown(): Promise<void>;
}

/** After the cut, how long streams get to send their shutdown event. */
const CUT_FLUSH_MS = 1000;
const PROBES = new Set(['/health', '/liveness', '/readiness']);

export function urlOf(host: string, port: number): string {
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

function listenProblem(err: unknown): ListenProblem {
  if (err instanceof Deno.errors.AddrInUse) return 'in_use';
  if (err instanceof Deno.errors.PermissionDenied || err instanceof Deno.errors.NotCapable) return 'denied';
  if (err instanceof Deno.errors.AddrNotAvailable) return 'not_local';
  return 'other';
}

/** Binds at once (`Deno.serve` throws AddrInUse and the like synchronously) on loopback or a given host. */
export function serveOn(
  hostname: string,
  port: number,
  handler: Deno.ServeHandler<Deno.NetAddr>,
): Deno.HttpServer<Deno.NetAddr> {
  return Deno.serve({ hostname, port, onListen: () => {} }, handler);
}

/** `serveOn`, with the command's configuration error (exit 2) when the listener cannot bind. */
function bind(target: ListenTarget, handler: Deno.ServeHandler<Deno.NetAddr>): Deno.HttpServer<Deno.NetAddr> {
  try {
    return serveOn(target.host, target.port, handler);
  } catch (err) {
    throw listenError(target, listenProblem(err), err instanceof Error ? err.message : String(err));
  }
}

/** Every listener, or none: one that cannot bind closes those already bound. */
function bindAll(config: RouterConfig, router: Router<FleetApi>): Deno.HttpServer<Deno.NetAddr>[] {
  const { host, port } = config.server;
  const servers: Deno.HttpServer<Deno.NetAddr>[] = [];
  try {
    const main = directHandler(router.direct, router.app.fetch);
    servers.push(bind({ portFlag: '--port', hostFlag: '--host', host, port }, main));
    const metrics = { portFlag: '--prometheus-port', hostFlag: '--prometheus-host', ...config.metrics };
    servers.push(bind(metrics, () => metricsResponse(router.metrics)));
    if (config.health.port !== undefined) {
      const target = { portFlag: '--health-check-port', hostFlag: '--host', host, port: config.health.port };
      servers.push(
        bind(target, (req, info) =>
          PROBES.has(new URL(req.url).pathname)
            ? router.app.fetch(req, info)
            : errorResponse(
                new RouterError('not_found', 'this port serves /health, /liveness and /readiness'),
              ),
        ),
      );
    }
    return servers;
  } catch (err) {
    for (const server of servers) void server.shutdown();
    throw err;
  }
}

function sleep(ms: number, signal?: AbortSignal): { done: Promise<void>; cancel(): void } {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const done = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
  return { done, cancel: () => clearTimeout(timer) };
}

/** The startup round behind the listeners, then the health loop (both stop with `stopping`). */
function runStartup(router: Router<FleetApi>, stopping: AbortSignal): Promise<boolean> {
  const { config, logger } = router;
  const ready = router
    .start((ms) => sleep(ms, stopping).done, stopping)
    .catch((err: unknown) => {
      logger.error('startup probing failed', { error: err });
      return false;
    });
  void ready.then(() => {
    if (config.health.disabled || stopping.aborted) return;
    const timer = setInterval(() => {
      router.healthTick().catch((err: unknown) => logger.error('health tick failed', { error: err }));
    }, config.health.intervalSecs * 1000);
    stopping.addEventListener('abort', () => clearInterval(timer), { once: true });
  });
  return ready;
}

/**
 * The registration socket is read every 100 ms rather than on the addon's wake-up, which Deno's
 * libuv shim can miss (a registration would then wait forever); engines refresh every 3 s.
 */
const ZMQ_POLL_MS = 100;

/** The engine transport, closed once the listeners are. */
type ClosableUpstream = Upstream & { close(): Promise<void> };

/** Deno's own `fetch` as the transport (VLLM_EDGE_ROUTER_TRANSPORT=fetch): it pools by itself. */
function fetchTransport(): ClosableUpstream {
  return Object.assign(fetchUpstream(), { close: async () => {} });
}

function createDenoRouter(
  config: RouterConfig,
  logSink: LogSink,
  p2p: P2pRegistry | undefined,
  upstream: ClosableUpstream,
): Promise<HostRouter> {
  return openHostRouter(config, {
    upstream,
    logSink,
    // Deno.serve hands the connection info to app.fetch as the second argument (Hono's c.env).
    peerAddress: (env) => (env as Deno.ServeHandlerInfo<Deno.NetAddr> | undefined)?.remoteAddr?.hostname,
    ...(p2p ? { p2pRegistry: p2p } : {}),
    stateStore: true,
  });
}

/**
 * The router and its listeners; with --vllm-discovery-address the registration socket first (a
 * failure to bind it, or to bind a listener, closes what was already bound).
 */
export async function openDenoRouter(
  config: RouterConfig,
  options: { logSink: LogSink; transport?: 'undici' | 'fetch' },
): Promise<DenoRouter> {
  const p2p = p2pRegistryFor(config, { pollMs: ZMQ_POLL_MS });
  const upstream = options.transport === 'fetch' ? fetchTransport() : createUndiciUpstream();
  const opened = await createDenoRouter(config, options.logSink, p2p, upstream).catch(async (err) => {
    await upstream.close();
    throw err;
  });
  try {
    if (p2p) {
      p2p.attach(opened.router);
      await bindP2p(p2p, config.pd.discoveryAddress as string);
    }
    return listen(config, opened, p2p, upstream);
  } catch (err) {
    await p2p?.close();
    await opened.close();
    await upstream.close();
    throw err;
  }
}

function listen(
  config: RouterConfig,
  opened: HostRouter,
  p2p: P2pRegistry | undefined,
  upstream: ClosableUpstream,
): DenoRouter {
  const { router } = opened;
  const [server, metricsServer, healthServer] = bindAll(config, router) as [
    Deno.HttpServer<Deno.NetAddr>,
    Deno.HttpServer<Deno.NetAddr>,
    Deno.HttpServer<Deno.NetAddr> | undefined,
  ];
  const stopping = new AbortController();
  const ready = runStartup(router, stopping.signal);
  const stopRuntimeMetrics = registerDenoRuntimeMetrics(router.metrics);

  let closing: Promise<void> | undefined;
  const stopAccepting = () => {
    stopping.abort();
    stopRuntimeMetrics();
    closing ??= Promise.all([
      ...[server, metricsServer, healthServer].map((s) => s?.shutdown()),
      p2p?.close(),
    ])
      .then(() => opened.close())
      .then(() => upstream.close());
    return closing;
  };
  return {
    router,
    logger: router.logger,
    url: urlOf(config.server.host, server.addr.port),
    port: server.addr.port,
    metricsUrl: `${urlOf(config.metrics.host, metricsServer.addr.port)}/metrics`,
    ...(healthServer ? { healthUrl: urlOf(config.server.host, healthServer.addr.port) } : {}),
    ...(p2p?.address ? { p2pAddress: p2p.address } : {}),
    ready,
    beginDrain: () => router.beginDrain(),
    stopAccepting,
    async shutdown() {
      router.shutdown();
      const flush = sleep(CUT_FLUSH_MS);
      await Promise.race([stopAccepting(), flush.done]);
      flush.cancel();
    },
  };
}
