/**
 * The worker admin API (DESIGN §12) as a route table: /workers (+ /workers/{id}, id = URL-encoded
 * worker id), the legacy vllm-router endpoints, cache flush fan-out, server and model info,
 * /finish_session. Handlers live in admin-workers.ts and admin-info.ts; their bodies go through
 * one parser (admin-request.ts). Bad input is a 400 naming the field.
 */
import type { Hono } from 'hono';
import { INFO_ROUTES } from './admin-info.ts';
import type { AdminDeps, AdminRoute } from './admin-request.ts';
import { WORKER_ROUTES } from './admin-workers.ts';

export type { AdminDeps } from './admin-request.ts';

const ADMIN_ROUTES: readonly AdminRoute[] = [...WORKER_ROUTES, ...INFO_ROUTES];

export function registerAdminRoutes(app: Hono, deps: AdminDeps): void {
  for (const route of ADMIN_ROUTES) {
    app.on(route.method, route.path, (c) => route.handle(c, deps));
  }
}
