/**
 * Admin handlers that are not about the registry: cache flush fan-out to every engine, server and
 * model info, health_generate, and /finish_session (releases a sticky session in every pool).
 */
import type { Context } from 'hono';
import type { AdminDeps, AdminRoute } from './admin-request.ts';
import { badRequest } from './admin-request.ts';
import { forwardToHealthyWorker, sendToWorker } from './worker-calls.ts';

async function flushCache(c: Context, deps: AdminDeps): Promise<Response> {
  const urls = [...new Set((await deps.fleet.listWorkers()).map((w) => w.url))];
  const results = await Promise.all(
    urls.map(async (url) => {
      const r = await sendToWorker(deps, url, '/flush_cache', 'POST');
      return { url, status: r.status ?? null, ok: r.ok, ...(r.error ? { error: r.error } : {}) };
    }),
  );
  const ok = results.every((r) => r.ok);
  return c.json({ ok, results }, ok ? 200 : 502);
}

async function serverInfo(c: Context, deps: AdminDeps): Promise<Response> {
  const { fleet, config } = deps;
  const workers = await fleet.listWorkers();
  return c.json({
    router: 'vllm-edge-router',
    policy: config.policy.name,
    workers: workers.length,
    healthy_workers: workers.filter((w) => w.healthy && !w.draining).length,
    models: await fleet.models(),
    retries: { max_attempts: config.retry.disabled ? 1 : config.retry.maxRetries },
    circuit_breaker: { disabled: config.circuitBreaker.disabled },
    health_check: { disabled: config.health.disabled, interval_secs: config.health.intervalSecs },
  });
}

async function finishSession(c: Context, deps: AdminDeps): Promise<Response> {
  const id = c.req.query('session_id');
  if (!id) return badRequest('session_id: required', 'session_id');
  const limit = deps.config.sll.maxSessionIdBytes;
  if (new TextEncoder().encode(id).byteLength > limit) {
    // No session this long was ever placed (longer ids get no affinity); never echo it.
    return badRequest(`session_id: longer than ${limit} bytes`, 'session_id');
  }
  await deps.fleet.finishSession(id);
  return c.json({ session_id: id, finished: true });
}

export const INFO_ROUTES: readonly AdminRoute[] = [
  { method: 'POST', path: '/flush_cache', handle: flushCache },
  { method: 'GET', path: '/get_server_info', handle: serverInfo },
  {
    method: 'GET',
    path: '/get_model_info',
    handle: (c, d) => forwardToHealthyWorker(d, c, '/get_model_info'),
  },
  {
    method: 'GET',
    path: '/health_generate',
    access: 'client',
    handle: (c, d) => forwardToHealthyWorker(d, c, '/health_generate', '/health'),
  },
  { method: 'POST', path: '/finish_session', access: 'client', handle: finishSession },
];
