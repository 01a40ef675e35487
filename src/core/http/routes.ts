/** Public endpoints: models, probes and metrics. */
import type { Hono } from 'hono';
import type { FleetApi } from '../contracts/fleet-api.ts';
import type { MetricsRegistry } from '../observability/metrics.ts';
import { PROMETHEUS_CONTENT_TYPE } from '../observability/metrics.ts';

export function registerPublicRoutes(
  app: Hono,
  fleet: FleetApi,
  metrics: MetricsRegistry,
  startedAt: number,
  draining: () => boolean = () => false,
): void {
  app.get('/v1/models', async (c) => {
    const models = await fleet.models();
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
    return {
      total: active.length,
      healthy: healthy.length,
      unhealthy: active.filter((w) => !w.healthy).map((w) => w.id),
      openCircuits: active.filter((w) => w.circuit === 'open').map((w) => w.id),
    };
  };

  app.get('/readiness', async (c) => {
    const counts = await healthCounts();
    const stopping = draining();
    const ready = counts.healthy > 0 && !stopping;
    return c.json(
      {
        status: ready ? 'ready' : 'not_ready',
        ...(stopping
          ? { reason: 'shutting_down' }
          : counts.healthy === 0
            ? { reason: 'no_available_workers' }
            : {}),
        healthy_workers: counts.healthy,
        total_workers: counts.total,
      },
      ready ? 200 : 503,
    );
  });

  app.get('/health', async (c) => {
    const counts = await healthCounts();
    const ok = counts.healthy > 0;
    return c.json(
      {
        status: ok ? 'healthy' : 'unhealthy',
        healthy_workers: counts.healthy,
        total_workers: counts.total,
        unhealthy_workers: counts.unhealthy,
        open_circuits: counts.openCircuits,
      },
      ok ? 200 : 503,
    );
  });

  app.get('/metrics', async () => metricsResponse(metrics));
}

export async function metricsResponse(metrics: MetricsRegistry): Promise<Response> {
  return new Response(await metrics.render(), { headers: { 'content-type': PROMETHEUS_CONTENT_TYPE } });
}
