/**
 * Small router-originated calls to engines (cache flush, engine management, info, health_generate),
 * with a timeout.
 */
import type { Context } from 'hono';
import type { RouterConfig } from '../config/schema.ts';
import { errorResponse, RouterError } from '../contracts/errors.ts';
import type { FleetApi } from '../contracts/fleet-api.ts';
import type { Clock } from '../contracts/runtime.ts';
import type { Upstream } from '../contracts/upstream.ts';
import { readUpstreamBody } from '../upstream/body.ts';
import { engineCall } from '../upstream/engine-call.ts';

interface CallDeps {
  fleet: FleetApi;
  upstream: Upstream;
  clock: Clock;
  config: RouterConfig;
}

export interface CallResult {
  ok: boolean;
  status?: number;
  headers?: Record<string, string>;
  body?: Uint8Array;
  error?: string;
}

/** What a call may add: a small body with its headers, and a timeout other than the probes'. */
export interface CallExtras {
  body?: Uint8Array;
  headers?: Record<string, string>;
  timeoutMs?: number;
}

/**
 * `method` on `baseUrl + path` with the engines' bearer (--api-key, never the caller's credentials)
 * and the health-check timeout unless `extras` gives another.
 */
export async function sendToWorker(
  deps: CallDeps,
  baseUrl: string,
  path: string,
  method: string,
  extras: CallExtras = {},
): Promise<CallResult> {
  const { config, clock } = deps;
  const call = await engineCall(
    deps.upstream,
    baseUrl + path,
    {
      clock,
      timeoutMs: extras.timeoutMs ?? config.health.timeoutSecs * 1000,
      apiKey: config.workers.apiKey,
      method,
      ...(extras.headers ? { headers: extras.headers } : {}),
      ...(extras.body ? { body: extras.body } : {}),
    },
    async (res) => {
      const body = await readUpstreamBody(res.body);
      const flat: Record<string, string> = {};
      for (const [k, v] of Object.entries(res.headers)) flat[k] = Array.isArray(v) ? v.join(', ') : v;
      return { ok: res.status >= 200 && res.status < 300, status: res.status, headers: flat, body };
    },
  );
  return call.ok ? call.value : { ok: false, error: call.timedOut ? call.message : String(call.error) };
}

/** GET `path` on a healthy worker and pass its answer on (`fallback` is tried on a 404). */
export async function forwardToHealthyWorker(
  deps: CallDeps,
  _c: Context,
  path: string,
  fallback?: string,
): Promise<Response> {
  const worker = (await deps.fleet.listWorkers()).find(
    (w) => w.healthy && !w.draining && w.circuit !== 'open',
  );
  if (!worker) {
    return errorResponse(new RouterError('no_available_workers', 'no healthy worker to answer this request'));
  }
  let result = await sendToWorker(deps, worker.url, path, 'GET');
  if (fallback && result.status === 404) result = await sendToWorker(deps, worker.url, fallback, 'GET');
  if (result.status === undefined) {
    // Client-facing: the transport's detail (and the worker's address) stay out of the answer.
    return errorResponse(new RouterError('upstream_unreachable', 'worker connection failed'));
  }
  const headers: Record<string, string> = {};
  if (deps.config.server.routedWorkerHeader) {
    headers['x-routed-worker-id'] = worker.id;
    headers['x-smg-routed-worker-id'] = worker.id;
  }
  const type = result.headers?.['content-type'];
  if (type) headers['content-type'] = type;
  return new Response(result.body as BodyInit, { status: result.status, headers });
}
