/**
 * Admin handlers for the worker registry: /workers (list, add, get, change, remove) and the
 * vllm-router endpoints /add_worker, /remove_worker, /list_workers, /get_loads. Unknown ids are
 * 404; duplicates 409 on /workers and idempotent on /add_worker. Removal drains: in-flight
 * requests finish first. Every data-parallel rank of a URL is added together.
 */
import type { Context } from 'hono';
import { errorResponse, RouterError } from '../contracts/errors.ts';
import { WorkerConflictError, type WorkerInfo, type WorkerSpec } from '../contracts/fleet-api.ts';
import { expandDataParallel, workerId } from '../fleet/workers.ts';
import {
  type AdminDeps,
  type AdminRoute,
  badRequest,
  readAdminBody,
  unknownWorker,
} from './admin-request.ts';
import { patchFromBody, specFromBody, workerBody, workerPatchBody, workerView } from './admin-views.ts';
import { allowlistRefusal, parseWorkerUrl } from './worker-url-rules.ts';

const baseOf = (url: string) => url.replace(/\/+$/, '');

/** Adds every DP rank of a spec; the ids that already existed are reported, not added. */
async function addExpanded(deps: AdminDeps, spec: WorkerSpec) {
  const { fleet, config } = deps;
  const ranks = expandDataParallel(spec, config.workers.dpSize);
  const existing: string[] = [];
  for (const rank of ranks) {
    try {
      await fleet.addWorker(rank);
    } catch (err) {
      if (!(err instanceof WorkerConflictError)) throw err;
      existing.push(workerId(baseOf(rank.url), rank.dpRank));
    }
  }
  const ids = ranks.map((r) => workerId(baseOf(r.url), r.dpRank)).filter((id) => !existing.includes(id));
  if (ids.length > 0) await deps.probe([baseOf(spec.url)]);
  const added: WorkerInfo[] = [];
  for (const id of ids) {
    const w = await fleet.getWorker(id);
    if (w) added.push(w);
  }
  return { added, existing };
}

async function addWorker(c: Context, deps: AdminDeps): Promise<Response> {
  const read = await readAdminBody(c, deps, workerBody, specFromBody);
  if (!read.ok) return read.response;
  const refused = allowlistRefusal(deps.config.workers.urlAllowlist, read.value.url);
  if (refused) return refused;
  const { added, existing } = await addExpanded(deps, read.value);
  if (existing.length > 0 && added.length === 0) {
    return errorResponse(
      new RouterError('worker_exists', `worker already registered: ${existing.join(', ')}`),
    );
  }
  return c.json({ workers: added.map(workerView) }, 201);
}

async function updateWorker(c: Context, deps: AdminDeps): Promise<Response> {
  const id = c.req.param('id') as string;
  const read = await readAdminBody(c, deps, workerPatchBody, patchFromBody);
  if (!read.ok) return read.response;
  const updated = await deps.fleet.updateWorker(id, read.value);
  return updated ? c.json(workerView(updated)) : unknownWorker(id);
}

async function deleteWorker(c: Context, deps: AdminDeps): Promise<Response> {
  const id = c.req.param('id') as string;
  const w = await deps.fleet.getWorker(id);
  if (!w) return unknownWorker(id);
  await deps.fleet.removeWorker(id);
  return c.json({ id, removed: true, draining: w.load > 0 }, 202);
}

async function legacyAdd(c: Context, deps: AdminDeps): Promise<Response> {
  const parsed = parseWorkerUrl(c.req.query('url'));
  if (!parsed.ok) return parsed.response;
  const refused = allowlistRefusal(deps.config.workers.urlAllowlist, parsed.url);
  if (refused) return refused;
  const { added, existing } = await addExpanded(deps, { url: parsed.url });
  return c.json(
    { added: added.map((w) => w.id), already_registered: existing },
    added.length > 0 ? 201 : 200,
  );
}

async function legacyRemove(c: Context, deps: AdminDeps): Promise<Response> {
  const url = c.req.query('url');
  if (!url) return badRequest('url: required', 'url');
  const base = baseOf(url);
  const workers = await deps.fleet.listWorkers();
  const ids = workers.filter((w) => w.id === base || w.url === base).map((w) => w.id);
  if (ids.length === 0) return unknownWorker(base);
  for (const id of ids) await deps.fleet.removeWorker(id);
  return c.json({ removed: ids });
}

export const WORKER_ROUTES: readonly AdminRoute[] = [
  {
    method: 'GET',
    path: '/workers',
    handle: async (c, d) => c.json({ workers: (await d.fleet.listWorkers()).map(workerView) }),
  },
  { method: 'POST', path: '/workers', handle: addWorker },
  {
    method: 'GET',
    path: '/workers/:id',
    handle: async (c, d) => {
      const id = c.req.param('id') as string;
      const w = await d.fleet.getWorker(id);
      return w ? c.json(workerView(w)) : unknownWorker(id);
    },
  },
  { method: 'PUT', path: '/workers/:id', handle: updateWorker },
  { method: 'DELETE', path: '/workers/:id', handle: deleteWorker },
  { method: 'POST', path: '/add_worker', handle: legacyAdd },
  { method: 'POST', path: '/remove_worker', handle: legacyRemove },
  {
    method: 'GET',
    path: '/list_workers',
    handle: async (c, d) => c.json({ urls: (await d.fleet.listWorkers()).map((w) => w.id) }),
  },
  {
    method: 'GET',
    path: '/get_loads',
    handle: async (c, d) =>
      c.json({
        workers: (await d.fleet.listWorkers()).map((w) =>
          w.role === 'regular'
            ? { worker: w.id, load: w.load }
            : { worker: w.id, load: w.load, role: w.role },
        ),
      }),
  },
];
