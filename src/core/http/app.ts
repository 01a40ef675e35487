/**
 * createRouterApp(config, deps): the router's HTTP surface as a Hono app, the same on every runtime.
 * Built by the composition root (`../router.ts`), which owns the fleet and how workers are refreshed.
 */
import { Hono } from 'hono';
import { cors } from 'hono/cors';
import type { RouterConfig } from '../config/schema.ts';
import { errorResponse, RouterError } from '../contracts/errors.ts';
import { createPipelineContext, type RouterDeps } from '../routing/context.ts';
import { registerAdminRoutes } from './admin.ts';
import { Admission } from './admission.ts';
import { registerInferenceRoutes } from './inference.ts';
import { registerPublicRoutes } from './routes.ts';

export interface AppOptions {
  /** Probes newly added workers at once (the root's `refreshWorkers`). */
  refreshWorkers(urls: string[]): Promise<void>;
}

export function createRouterApp(config: RouterConfig, deps: RouterDeps, options: AppOptions): Hono {
  const app = new Hono();
  if (config.server.corsAllowedOrigins.length > 0) {
    app.use('*', cors({ origin: config.server.corsAllowedOrigins }));
  }
  const admission = new Admission(
    config.admission.maxConcurrentRequests,
    config.admission.queueSize,
    config.admission.queueTimeoutSecs * 1000,
    deps.clock,
  );
  registerPublicRoutes(app, deps.fleet, deps.metrics, deps.clock.now());
  registerAdminRoutes(app, {
    fleet: deps.fleet,
    upstream: deps.upstream,
    clock: deps.clock,
    config,
    probe: (urls) => options.refreshWorkers(urls),
  });
  registerInferenceRoutes(app, config, createPipelineContext(config, deps), admission);

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
