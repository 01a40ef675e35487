/**
 * Runs the router on Deno: builds the dependencies (the Web `fetch` as transport, system clock,
 * in-memory fleet), waits for a healthy worker, runs the health tick on an interval, serves
 * `app.fetch` with `Deno.serve` and /metrics on the Prometheus listener, and stops gracefully
 * (stop accepting, let in-flight streams finish within the grace period).
 */
import type { RouterConfig } from '../../core/config/schema.ts';
import { metricsResponse } from '../../core/http/routes.ts';
import type { LogSink } from '../../core/observability/logger.ts';
import { createRouter, type Router } from '../../core/router.ts';
import { fetchUpstream } from '../../core/upstream/fetch-upstream.ts';

export interface DenoRouter extends Router {
  url: string;
  port: number;
  metricsUrl: string;
  /**
   * Stops accepting and waits up to `graceMs` for in-flight requests. Resolves true when they all
   * finished, false when the grace period ran out first (the caller then exits, cutting them).
   */
  close(graceMs?: number): Promise<boolean>;
}

export function urlOf(host: string, port: number): string {
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** Binds at once (`Deno.serve` throws AddrInUse and the like synchronously) on loopback or a given host. */
export function serveOn(
  hostname: string,
  port: number,
  handler: Deno.ServeHandler<Deno.NetAddr>,
): Deno.HttpServer<Deno.NetAddr> {
  return Deno.serve({ hostname, port, onListen: () => {} }, handler);
}

function sleep(ms: number): { done: Promise<void>; cancel(): void } {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const done = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  return { done, cancel: () => clearTimeout(timer) };
}

export async function startDenoRouter(
  config: RouterConfig,
  options: { logSink: LogSink },
): Promise<DenoRouter> {
  const router = createRouter(config, {
    upstream: fetchUpstream(),
    logSink: options.logSink,
    // Deno.serve hands the connection info to app.fetch as the second argument (Hono's c.env).
    peerAddress: (c) => (c.env as Deno.ServeHandlerInfo<Deno.NetAddr> | undefined)?.remoteAddr?.hostname,
  });
  await router.start((ms) => sleep(ms).done);
  const healthTimer = config.health.disabled
    ? undefined
    : setInterval(() => {
        router
          .healthTick()
          .catch((err: unknown) => router.logger.error('health tick failed', { error: err }));
      }, config.health.intervalSecs * 1000);

  const server = serveOn(config.server.host, config.server.port, router.app.fetch);
  const metricsServer = serveOn(config.metrics.host, config.metrics.port, () =>
    metricsResponse(router.metrics),
  );

  let closing: Promise<boolean> | undefined;
  return {
    ...router,
    url: urlOf(config.server.host, server.addr.port),
    port: server.addr.port,
    metricsUrl: `${urlOf(config.metrics.host, metricsServer.addr.port)}/metrics`,
    close(graceMs = config.server.shutdownGraceSecs * 1000) {
      closing ??= (async () => {
        clearInterval(healthTimer);
        const grace = sleep(graceMs);
        const drained = Promise.all([server.shutdown(), metricsServer.shutdown()]).then(() => true);
        const finished = await Promise.race([drained, grace.done.then(() => false)]);
        grace.cancel();
        return finished;
      })();
      return closing;
    },
  };
}
