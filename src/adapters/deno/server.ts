/**
 * Runs the router on Deno: builds the dependencies (the Web `fetch` as transport, system clock,
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
 */
import { type ListenProblem, type ListenTarget, listenError } from '../../core/cli.ts';
import type { RouterConfig } from '../../core/config/schema.ts';
import { errorResponse, RouterError } from '../../core/contracts/errors.ts';
import { metricsResponse } from '../../core/http/routes.ts';
import type { Logger, LogSink } from '../../core/observability/logger.ts';
import { createRouter, type Router } from '../../core/router.ts';
import { fetchUpstream } from '../../core/upstream/fetch-upstream.ts';

export interface DenoRouter {
  router: Router;
  logger: Logger;
  url: string;
  port: number;
  metricsUrl: string;
  healthUrl?: string;
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
function bindAll(config: RouterConfig, router: Router): Deno.HttpServer<Deno.NetAddr>[] {
  const { host, port } = config.server;
  const servers: Deno.HttpServer<Deno.NetAddr>[] = [];
  try {
    servers.push(bind({ portFlag: '--port', hostFlag: '--host', host, port }, router.app.fetch));
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
function runStartup(router: Router, stopping: AbortSignal): Promise<boolean> {
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

export function startDenoRouter(config: RouterConfig, options: { logSink: LogSink }): DenoRouter {
  const router = createRouter(config, {
    upstream: fetchUpstream(),
    logSink: options.logSink,
    // Deno.serve hands the connection info to app.fetch as the second argument (Hono's c.env).
    peerAddress: (c) => (c.env as Deno.ServeHandlerInfo<Deno.NetAddr> | undefined)?.remoteAddr?.hostname,
  });
  const [server, metricsServer, healthServer] = bindAll(config, router) as [
    Deno.HttpServer<Deno.NetAddr>,
    Deno.HttpServer<Deno.NetAddr>,
    Deno.HttpServer<Deno.NetAddr> | undefined,
  ];
  const stopping = new AbortController();
  const ready = runStartup(router, stopping.signal);

  let closing: Promise<void> | undefined;
  const stopAccepting = () => {
    stopping.abort();
    closing ??= Promise.all([server, metricsServer, healthServer].map((s) => s?.shutdown())).then(() => {});
    return closing;
  };
  return {
    router,
    logger: router.logger,
    url: urlOf(config.server.host, server.addr.port),
    port: server.addr.port,
    metricsUrl: `${urlOf(config.metrics.host, metricsServer.addr.port)}/metrics`,
    ...(healthServer ? { healthUrl: urlOf(config.server.host, healthServer.addr.port) } : {}),
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
