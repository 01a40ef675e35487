/**
 * createRouterApp(config, deps): the router's HTTP surface as a Hono app, the same on every runtime.
 * Built by the composition root (`../router.ts`), which owns the fleet and how workers are refreshed.
 */
import { Hono } from 'hono';
import type { RouterConfig } from '../config/schema.ts';
import { toResponse } from '../contracts/answer.ts';
import { errorResponse, RouterError } from '../contracts/errors.ts';
import type { StoreStatus } from '../fleet/store-link.ts';
import type { FleetEvents } from '../observability/fleet-events.ts';
import { createPipelineContext, type RouterDeps } from '../routing/context.ts';
import { isAdminPath, registerAdminRoutes } from './admin.ts';
import { createAdminGuard } from './admin-guard.ts';
import { Admission } from './admission.ts';
import { type ClientAuth, createClientAuth } from './client-auth.ts';
import { optionsResponse, routerCors } from './cors.ts';
import { isDashboardPath, registerDashboard } from './dashboard.ts';
import type { InboundHooks } from './inbound.ts';
import {
  createInference,
  type Inference,
  internalErrorAnswer,
  registerInferenceRoutes,
} from './inference.ts';
import { unsafePathResponse } from './path-hygiene.ts';
import { registerPublicRoutes } from './routes.ts';

export interface AppOptions extends InboundHooks {
  /** Probes newly added workers at once (the root's `refreshWorkers`). */
  refreshWorkers(urls: string[]): Promise<void>;
  /** Admin routes without --admin-api-key: loopback peers only (Node, Deno) or nobody (Workers). */
  adminWithoutKey?: 'loopback' | 'off';
  /** The admin Host rule (DNS rebinding); Workers turn it off (see AdminGuardOptions). */
  adminHostCheck?: boolean;
  /** True once shutdown began: /readiness answers 503 while requests are still served. */
  draining?: () => boolean;
  /** Replicas sharing a store: its state, shown by /health. */
  storeStatus?: () => StoreStatus;
  /** The fleet's events (breakers, health), for the live fleet page; absent where the fleet is elsewhere. */
  fleetEvents?: FleetEvents | undefined;
}

/** Probes stay open whatever the auth settings (Kubernetes calls them without credentials). */
const PROBES = new Set(['/liveness', '/readiness', '/health']);

export interface RouterApp {
  app: Hono;
  /**
   * The inference handler for a host that serves the JSON inference routes itself (POST, exact
   * path), without the app, behind client auth when it is on: unset with CORS origins (whose
   * middleware adds headers to every answer), so both ways answer alike.
   */
  direct: Inference | undefined;
}

export function createRouterApp(config: RouterConfig, deps: RouterDeps, options: AppOptions): RouterApp {
  const app = new Hono();
  // With allowed origins, hono's CORS middleware answers preflights and adds the headers; without,
  // the pre-routing step below answers every OPTIONS (no middleware on the hot path).
  const corsOn = config.server.corsAllowedOrigins.length > 0;
  if (corsOn) app.use('*', routerCors(config.server.corsAllowedOrigins));
  const clientAuth = createClientAuth(config, deps);
  if (clientAuth) {
    // With an admin key, admin routes take that key instead of a client token.
    const adminKeyed = config.admin.apiKey !== undefined;
    app.use(
      '*',
      clientAuth.middleware(
        (path) => PROBES.has(path) || (adminKeyed && (isAdminPath(path) || isDashboardPath(path))),
      ),
    );
  }
  const admission = new Admission(
    config.admission.maxConcurrentRequests,
    config.admission.queueSize,
    config.admission.queueTimeoutSecs * 1000,
    deps.clock,
  );
  registerPublicRoutes(app, deps.fleet, deps.metrics, deps.clock.now(), {
    ...(options.draining ? { draining: options.draining } : {}),
    pd: config.pd.enabled,
    ...(options.storeStatus ? { storeStatus: options.storeStatus } : {}),
  });
  const adminGuard = createAdminGuard(config, {
    withoutKey: options.adminWithoutKey ?? 'loopback',
    ...(options.adminHostCheck === false ? { hostCheck: false } : {}),
    ...(options.peerAddress ? { peerAddress: options.peerAddress } : {}),
    ...(clientAuth ? { clientAuth } : {}),
  });
  // Before the admin routes: the page notes the worker changes made through them.
  registerDashboard(app, { ...deps, config, fleetEvents: options.fleetEvents }, adminGuard);
  registerAdminRoutes(
    app,
    {
      fleet: deps.fleet,
      upstream: deps.upstream,
      clock: deps.clock,
      config,
      probe: (urls) => options.refreshWorkers(urls),
    },
    adminGuard,
  );
  const inference = createInference(config, createPipelineContext(config, deps), admission);
  registerInferenceRoutes(app, inference, options);

  app.notFound((c) =>
    errorResponse(
      new RouterError('not_found', `no route for ${c.req.method} ${new URL(c.req.url).pathname}`),
    ),
  );
  app.onError((err, c) => {
    if (err instanceof RouterError) return errorResponse(err);
    return toResponse(internalErrorAnswer(deps.logger, c.req.path, err));
  });
  // Before routing: unsafe paths (400) and, without CORS origins, every OPTIONS (204, never an
  // engine). A wrapper rather than middleware, so a plain request pays for neither.
  const dispatch = app.fetch;
  app.fetch = (request, env, executionCtx) =>
    unsafePathResponse(request, env) ??
    (!corsOn && request.method === 'OPTIONS' ? optionsResponse() : dispatch(request, env, executionCtx));
  return { app, direct: corsOn ? undefined : authenticated(inference, clientAuth) };
}

/** The inference handler behind client auth, as the middleware puts the Hono routes behind it. */
function authenticated(inference: Inference, clientAuth: ClientAuth | undefined): Inference {
  if (!clientAuth) return inference;
  return {
    ...inference,
    serve: async (route, inbound) =>
      (await clientAuth.checkAuthorization(inbound.header('authorization'))) ??
      inference.serve(route, inbound),
  };
}
