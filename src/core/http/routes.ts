/** Public endpoints: models, probes and metrics. */
import type { Hono } from 'hono';
import type { FleetApi, WorkerInfo } from '../contracts/fleet-api.ts';
import type { StoreStatus } from '../fleet/store-link.ts';
import type { MetricsRegistry } from '../observability/metrics.ts';
import { PROMETHEUS_CONTENT_TYPE } from '../observability/metrics.ts';

export function registerPublicRoutes(
  app: Hono,
  fleet: FleetApi,
  metrics: MetricsRegistry,
  startedAt: number,
  options: { draining?: () => boolean; pd?: boolean; storeStatus?: () => StoreStatus } = {},
): void {
  const draining = options.draining ?? (() => false);
  const pd = options.pd === true;
  app.get('/v1/models', async (c) => {
    const models = pd ? decodeModels(await fleet.listWorkers()) : await fleet.models();
    const created = Math.floor(startedAt / 1000);
    return c.json({
      object: 'list',
      data: models.map((id) => ({ id, object: 'model', created, owned_by: 'vllm-edge-router' })),
    });
  });

  app.get('/liveness', (c) => c.json({ status: 'alive' }));

  const healthCounts = async () => {
    const workers = await fleet.listWorkers();
    const active = workers.filter((w) => !w.draining);
    const healthy = active.filter((w) => w.healthy);
    // Prefill/decode: a request needs a healthy worker of each role.
    const serving = pd
      ? Math.min(...(['prefill', 'decode'] as const).map((r) => healthy.filter((w) => w.role === r).length))
      : healthy.length;
    return {
      total: active.length,
      healthy: healthy.length,
      serving,
      unhealthy: active.filter((w) => !w.healthy).map((w) => w.id),
      openCircuits: active.filter((w) => w.circuit === 'open').map((w) => w.id),
    };
  };

  app.get('/readiness', async (c) => {
    const counts = await healthCounts();
    const stopping = draining();
    const ready = counts.serving > 0 && !stopping;
    return c.json(
      {
        status: ready ? 'ready' : 'not_ready',
        ...(stopping
          ? { reason: 'shutting_down' }
          : counts.serving === 0
            ? {
                reason: counts.healthy === 0 ? 'no_available_workers' : 'no_healthy_prefill_or_decode_worker',
              }
            : {}),
        healthy_workers: counts.healthy,
        total_workers: counts.total,
      },
      ready ? 200 : 503,
    );
  });

  app.get('/health', async (c) => {
    const counts = await healthCounts();
    const ok = counts.serving > 0;
    return c.json(
      {
        status: ok ? 'healthy' : 'unhealthy',
        healthy_workers: counts.healthy,
        total_workers: counts.total,
        unhealthy_workers: counts.unhealthy,
        open_circuits: counts.openCircuits,
        ...(options.storeStatus ? { state_store: storeStatusJson(options.storeStatus()) } : {}),
      },
      ok ? 200 : 503,
    );
  });

  app.get('/metrics', async () => metricsResponse(metrics));
}

/** The shared store's state as /health shows it (a store that is down degrades, not fails: 200 stays). */
function storeStatusJson(s: StoreStatus) {
  return {
    url: s.url,
    connected: s.connected,
    lag_seconds: s.lagSeconds === null ? null : Math.round(s.lagSeconds * 1000) / 1000,
    fallbacks: s.fallbacks,
  };
}

/** Models of the decode workers (they answer the client), first seen first. */
function decodeModels(workers: WorkerInfo[]): string[] {
  const out = new Set<string>();
  for (const w of workers) if (w.role === 'decode' && !w.draining) for (const m of w.models ?? []) out.add(m);
  return [...out];
}

export async function metricsResponse(metrics: MetricsRegistry): Promise<Response> {
  return new Response(await metrics.render(), { headers: { 'content-type': PROMETHEUS_CONTENT_TYPE } });
}
