/**
 * The worker admin API (DESIGN §12): /workers (+ /workers/{id}, id = URL-encoded worker id), the
 * legacy vllm-router endpoints, cache flush fan-out, server and model info, /finish_session.
 * Bad input is a 400 naming the field; unknown ids 404; duplicates 409 on /workers and idempotent
 * on /add_worker. Removal drains: in-flight requests finish first.
 */
import type { Context, Hono } from 'hono';
import type { RouterConfig } from '../config/schema.ts';
import { errorResponse, RouterError } from '../contracts/errors.ts';
import {
  type FleetApi,
  WorkerConflictError,
  type WorkerInfo,
  type WorkerSpec,
} from '../contracts/fleet-api.ts';
import type { Clock } from '../contracts/runtime.ts';
import type { Upstream } from '../contracts/upstream.ts';
import { expandDataParallel, workerId } from '../fleet/workers.ts';
import { retrySettings } from '../resilience/backoff.ts';
import {
  describeIssues,
  patchFromBody,
  specFromBody,
  workerBody,
  workerPatchBody,
  workerView,
} from './admin-views.ts';
import { forwardToHealthyWorker, sendToWorker } from './worker-calls.ts';

export interface AdminDeps {
  fleet: FleetApi;
  upstream: Upstream;
  clock: Clock;
  config: RouterConfig;
  /** Probes new workers at once (they take traffic after their first good probe). */
  probe(urls: string[]): Promise<void>;
}

const bad = (message: string, param?: string) =>
  errorResponse(new RouterError('invalid_request', message, param === undefined ? undefined : { param }));
const unknown = (id: string) => errorResponse(new RouterError('worker_not_found', `no worker with id ${id}`));

async function jsonBody(c: Context): Promise<unknown> {
  try {
    return await c.req.json();
  } catch {
    throw new RouterError('invalid_json', 'request body is not valid JSON');
  }
}

/** Checks retry overrides against the global settings (initial ≤ max and the other rules). */
function checkRetryOverride(config: RouterConfig, spec: { retry?: Partial<RouterConfig['retry']> | null }) {
  if (!spec.retry) return;
  retrySettings({ ...config.retry, ...spec.retry });
}

export function registerAdminRoutes(app: Hono, deps: AdminDeps): void {
  const { fleet, config } = deps;
  const dpSize = config.workers.dpSize;

  /** Adds every DP rank of a spec; the ids that already existed are reported, not added. */
  const addExpanded = async (spec: WorkerSpec) => {
    const added: WorkerInfo[] = [];
    const existing: string[] = [];
    for (const rank of expandDataParallel(spec, dpSize)) {
      try {
        await fleet.addWorker(rank);
      } catch (err) {
        if (err instanceof WorkerConflictError)
          existing.push(workerId(rank.url.replace(/\/+$/, ''), rank.dpRank));
        else throw err;
      }
    }
    const ids = expandDataParallel(spec, dpSize)
      .map((r) => workerId(r.url.replace(/\/+$/, ''), r.dpRank))
      .filter((id) => !existing.includes(id));
    if (ids.length > 0) await deps.probe([spec.url.replace(/\/+$/, '')]);
    for (const id of ids) {
      const w = await fleet.getWorker(id);
      if (w) added.push(w);
    }
    return { added, existing };
  };

  app.get('/workers', async (c) => c.json({ workers: (await fleet.listWorkers()).map(workerView) }));

  app.post('/workers', async (c) => {
    const parsed = workerBody.safeParse(await jsonBody(c));
    if (!parsed.success) return bad(describeIssues(parsed.error));
    const spec = specFromBody(parsed.data);
    try {
      checkRetryOverride(config, spec);
    } catch (err) {
      return bad(err instanceof Error ? err.message : String(err), 'retry');
    }
    const { added, existing } = await addExpanded(spec);
    if (existing.length > 0 && added.length === 0) {
      return errorResponse(
        new RouterError('worker_exists', `worker already registered: ${existing.join(', ')}`),
      );
    }
    return c.json({ workers: added.map(workerView) }, 201);
  });

  app.get('/workers/:id', async (c) => {
    const id = c.req.param('id');
    const w = await fleet.getWorker(id);
    return w ? c.json(workerView(w)) : unknown(id);
  });

  app.put('/workers/:id', async (c) => {
    const id = c.req.param('id');
    const parsed = workerPatchBody.safeParse(await jsonBody(c));
    if (!parsed.success) return bad(describeIssues(parsed.error));
    const patch = patchFromBody(parsed.data);
    try {
      checkRetryOverride(config, patch);
    } catch (err) {
      return bad(err instanceof Error ? err.message : String(err), 'retry');
    }
    const updated = await fleet.updateWorker(id, patch);
    return updated ? c.json(workerView(updated)) : unknown(id);
  });

  app.delete('/workers/:id', async (c) => {
    const id = c.req.param('id');
    const w = await fleet.getWorker(id);
    if (!w) return unknown(id);
    await fleet.removeWorker(id);
    return c.json({ id, removed: true, draining: w.load > 0 }, 202);
  });

  app.post('/add_worker', async (c) => {
    const url = c.req.query('url');
    const parsed = workerBody.shape.url.safeParse(url);
    if (!parsed.success) return bad(`url: ${parsed.error.issues[0]?.message ?? 'invalid'}`, 'url');
    const { added, existing } = await addExpanded({ url: parsed.data });
    return c.json(
      { added: added.map((w) => w.id), already_registered: existing },
      added.length > 0 ? 201 : 200,
    );
  });

  app.post('/remove_worker', async (c) => {
    const url = c.req.query('url');
    if (!url) return bad('url: required', 'url');
    const base = url.replace(/\/+$/, '');
    const ids = (await fleet.listWorkers()).filter((w) => w.id === base || w.url === base).map((w) => w.id);
    if (ids.length === 0) return unknown(base);
    for (const id of ids) await fleet.removeWorker(id);
    return c.json({ removed: ids });
  });

  app.get('/list_workers', async (c) => c.json({ urls: (await fleet.listWorkers()).map((w) => w.id) }));

  app.get('/get_loads', async (c) =>
    c.json({ workers: (await fleet.listWorkers()).map((w) => ({ worker: w.id, load: w.load })) }),
  );

  app.post('/flush_cache', async (c) => {
    const urls = [...new Set((await fleet.listWorkers()).map((w) => w.url))];
    const results = await Promise.all(
      urls.map(async (url) => {
        const r = await sendToWorker(deps, url, '/flush_cache', 'POST');
        return { url, status: r.status ?? null, ok: r.ok, ...(r.error ? { error: r.error } : {}) };
      }),
    );
    const ok = results.every((r) => r.ok);
    return c.json({ ok, results }, ok ? 200 : 502);
  });

  app.get('/get_server_info', async (c) => {
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
  });

  app.get('/get_model_info', (c) => forwardToHealthyWorker(deps, c, '/get_model_info'));
  app.get('/health_generate', (c) => forwardToHealthyWorker(deps, c, '/health_generate', '/health'));

  app.post('/finish_session', async (c) => {
    const id = c.req.query('session_id');
    if (!id) return bad('session_id: required', 'session_id');
    await fleet.finishSession(id);
    return c.json({ session_id: id, finished: true });
  });
}
