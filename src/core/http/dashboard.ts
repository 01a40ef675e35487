/**
 * The live fleet page: GET /dashboard (the page, dashboard-page.ts) and GET /dashboard/state (the
 * JSON it polls, dashboard-state.ts), both behind the admin guard with the admin API's rules.
 * Without the admin key the page itself still loads, with status 401: it holds no fleet data, and
 * the operator types the key into it (the key then goes as a bearer with every request it sends).
 * Every other refusal (a remote peer without a key, a foreign Host) is the guard's answer as is.
 *
 * It owns the router's LiveStats, fed by the request observations and the fleet events, and notes
 * the workers added, drained or removed through the admin API (a middleware on those routes reads
 * the ids from their answers), so they show up among the page's events.
 */
import type { Context, Hono, Next } from 'hono';
import type { RouterConfig } from '../config/schema.ts';
import type { FleetApi } from '../contracts/fleet-api.ts';
import type { Clock } from '../contracts/runtime.ts';
import type { FleetEvents } from '../observability/fleet-events.ts';
import { LiveStats } from '../observability/live-stats.ts';
import type { MetricsRegistry } from '../observability/metrics.ts';
import type { Observations } from '../observability/observations.ts';
import type { AdminGuard } from './admin.ts';
import type { AdminRoute } from './admin-request.ts';
import { DASHBOARD_PAGE, dashboardCsp } from './dashboard-page.ts';
import { type DashboardDeps, dashboardState } from './dashboard-state.ts';

export interface DashboardOptions {
  fleet: FleetApi;
  clock: Clock;
  config: RouterConfig;
  metrics: MetricsRegistry;
  observations?: Observations;
  fleetEvents?: FleetEvents;
}

const PATHS = new Set(['/dashboard', '/dashboard/state']);

/** The dashboard's paths (client auth leaves them to the admin key, as it does the admin API). */
export const isDashboardPath = (path: string) => PATHS.has(path);

const PRIVATE = { 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' };

/** The CSP header, computed once (the resolved value is kept: on Workers a promise belongs to one request). */
let csp: string | undefined;

async function page(status: 200 | 401, refusal?: Response): Promise<Response> {
  csp ??= await dashboardCsp();
  const challenge = refusal?.headers.get('www-authenticate');
  return new Response(DASHBOARD_PAGE, {
    status,
    headers: {
      ...PRIVATE,
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy': csp,
      'referrer-policy': 'no-referrer',
      'x-frame-options': 'DENY',
      ...(challenge ? { 'www-authenticate': challenge } : {}),
    },
  });
}

/** Registers the dashboard routes; call it before the admin routes (its middleware watches them). */
export function registerDashboard(app: Hono, options: DashboardOptions, guard: AdminGuard): LiveStats {
  const stats = new LiveStats(options.clock);
  options.observations?.add((o) => stats.observe(o));
  options.fleetEvents?.add((level, message, fields) => stats.fleetEvent(level, message, fields));
  const deps: DashboardDeps = { ...options, stats };
  const sendState = async (c: Context) => c.json(await dashboardState(deps), 200, PRIVATE);
  // The guard is handed these as the routes it guards (it applies the same rules to every route).
  const pageRoute: AdminRoute = { method: 'GET', path: '/dashboard', handle: () => page(200) };
  const stateRoute: AdminRoute = { method: 'GET', path: '/dashboard/state', handle: sendState };
  app.get(pageRoute.path, async (c) => {
    const refused = await guard(c, pageRoute);
    if (refused?.status === 401) return page(401, refused);
    return refused ?? page(200);
  });
  app.get(stateRoute.path, async (c) => (await guard(c, stateRoute)) ?? sendState(c));

  const watch = adminChanges(options.fleet, stats);
  for (const path of ['/workers', '/workers/:id', '/add_worker', '/remove_worker']) app.use(path, watch);
  return stats;
}

/** Reads the worker ids a successful admin change names in its answer, and notes what became of them. */
function adminChanges(fleet: FleetApi, stats: LiveStats) {
  return async (c: Context, next: Next) => {
    await next();
    const method = c.req.method;
    if ((method !== 'POST' && method !== 'DELETE') || c.res.status >= 300) return;
    let body: { workers?: { id: string }[]; added?: string[]; removed?: string[] | boolean; id?: string };
    try {
      body = await c.res.clone().json();
    } catch {
      return;
    }
    const added = body.workers?.map((w) => w.id) ?? body.added ?? [];
    for (const id of added) stats.adminChange('added', id);
    const removed = Array.isArray(body.removed) ? body.removed : body.id !== undefined ? [body.id] : [];
    for (const id of removed) {
      const w = await fleet.getWorker(id);
      stats.adminChange(w?.draining ? 'draining' : 'removed', id);
    }
  };
}
