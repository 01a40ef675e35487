/** createRouterApp(config, deps): the whole router as a Hono app, the same on every runtime. */
import { Hono } from 'hono';
import { cors } from 'hono/cors';
import type { RouterConfig } from './config/schema.ts';
import type { RouterDeps } from './deps.ts';
import { errorResponse, RouterError } from './errors.ts';
import { discoverModels } from './fleet/discovery.ts';
import { runHealthTick } from './fleet/health-check.ts';
import { registerAdminRoutes } from './http/admin.ts';
import { Admission } from './http/admission.ts';
import { registerInferenceRoutes } from './http/inference.ts';
import { registerPublicRoutes } from './http/routes.ts';
import { createInstruments, registerFleetCollector } from './observability/instruments.ts';
import { RetryBudget } from './resilience/retry-budget.ts';
import type { PipelineContext } from './routing/pipeline.ts';

export function createRouterApp(config: RouterConfig, deps: RouterDeps): Hono {
  const app = new Hono();
  const instruments = createInstruments(deps.metrics);
  registerFleetCollector(deps.metrics, deps.fleet);

  if (config.server.corsAllowedOrigins.length > 0) {
    app.use('*', cors({ origin: config.server.corsAllowedOrigins }));
  }

  const pipeline: PipelineContext = {
    deps,
    instruments,
    classes: {
      retryable: new Set(config.retry.retryableStatusCodes),
      capacity: new Set(config.circuitBreaker.capacityStatusCodes),
    },
    retry: config.retry,
    budget: new RetryBudget(
      { ratio: config.retry.budgetRatio, minPerSec: config.retry.budgetMinPerSec },
      deps.clock,
    ),
    admission: new Admission(
      config.admission.maxConcurrentRequests,
      config.admission.queueSize,
      config.admission.queueTimeoutSecs * 1000,
      deps.clock,
    ),
    timeoutMs: config.server.requestTimeoutSecs * 1000,
    ...(config.workers.apiKey === undefined ? {} : { apiKey: config.workers.apiKey }),
  };

  registerPublicRoutes(app, deps.fleet, deps.metrics, deps.clock.now());
  const tickDeps = { fleet: deps.fleet, upstream: deps.upstream, clock: deps.clock, config };
  registerAdminRoutes(app, {
    ...tickDeps,
    probe: async (urls) => {
      if (!config.health.disabled) await runHealthTick(tickDeps, urls);
      else
        await discoverModels(deps.fleet, deps.upstream, {
          clock: deps.clock,
          timeoutMs: config.health.timeoutSecs * 1000,
        });
    },
  });
  registerInferenceRoutes(app, config, pipeline);

  app.notFound((c) =>
    errorResponse(
      new RouterError('not_found', `no route for ${c.req.method} ${new URL(c.req.url).pathname}`),
    ),
  );
  app.onError((err, c) => {
    if (err instanceof RouterError) return errorResponse(err);
    deps.logger.error('unhandled error', { path: c.req.path, error: err });
    return errorResponse(new RouterError('internal_error', 'internal router error'));
  });
  return app;
}
