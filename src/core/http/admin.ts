/**
 * The worker admin API (DESIGN §12) as a route table: /workers (+ /workers/{id}, id = URL-encoded
 * worker id), the legacy vllm-router endpoints, cache flush fan-out, vLLM's engine-management
 * endpoints (admin-engine.ts), server and model info, /finish_session. Handlers live in
 * admin-workers.ts, admin-engine.ts and admin-info.ts; their bodies go through one parser
 * (admin-request.ts). Bad input is a 400 naming the field. Every admin route (not the `client`
 * ones) passes the admin guard (admin-guard.ts) before its handler runs.
 */
import type { Context, Hono } from 'hono';
import { errorResponse, RouterError } from '../contracts/errors.ts';
import { ENGINE_ROUTES } from './admin-engine.ts';
import { INFO_ROUTES } from './admin-info.ts';
import type { AdminDeps, AdminRoute } from './admin-request.ts';
import { WORKER_ROUTES } from './admin-workers.ts';

export type { AdminDeps } from './admin-request.ts';

export const ADMIN_ROUTES: readonly AdminRoute[] = [...WORKER_ROUTES, ...INFO_ROUTES, ...ENGINE_ROUTES];

/** Answers a request the admin guard refuses; undefined lets the handler run. */
export type AdminGuard = (
  c: Context,
  route: AdminRoute,
) => Response | undefined | Promise<Response | undefined>;

export function registerAdminRoutes(app: Hono, deps: AdminDeps, guard: AdminGuard): void {
  for (const route of ADMIN_ROUTES) {
    if (route.access === 'client') {
      app.on(route.method, route.path, (c) => route.handle(c, deps));
      continue;
    }
    app.on(route.method, route.path, async (c) => (await guard(c, route)) ?? route.handle(c, deps));
  }
  // An admin path under /v1 with another method or a trailing slash is no passthrough path either.
  for (const path of new Set(ADMIN_ROUTES.map((r) => r.path).filter((p) => p.startsWith('/v1/')))) {
    app.all(path, (c) => notFound(c));
    app.all(`${path}/`, (c) => notFound(c));
  }
}

const notFound = (c: Context) =>
  errorResponse(new RouterError('not_found', `no route for ${c.req.method} ${new URL(c.req.url).pathname}`));

/** The paths of the admin-only routes, as patterns (`/workers/:id` matches one segment). */
export function isAdminPath(path: string): boolean {
  return ADMIN_PATTERNS.some((re) => re.test(path));
}

const ADMIN_PATTERNS: readonly RegExp[] = [
  ...new Set(ADMIN_ROUTES.filter((r) => r.access !== 'client').map((r) => r.path)),
].map((p) => new RegExp(`^${p.replace(/:[a-z]+/g, '[^/]+')}/?$`));
