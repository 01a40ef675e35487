/**
 * vLLM's engine-management endpoints as admin routes (never the /v1/* passthrough): LoRA adapters,
 * sleep mode, cache resets, collective RPC, the profiler, pause/resume and elastic EP scaling. Each
 * is fanned out to every worker that is not draining, once per engine URL (data-parallel ranks
 * share one), with the request's query and JSON body and the engines' bearer (--api-key; the
 * caller's credentials stay with the router). The answer sums up every engine's: 200 when all
 * answered 2xx, 502 otherwise.
 */
import type { Context } from 'hono';
import { RouterError } from '../contracts/errors.ts';
import { type AdminDeps, type AdminRoute, forbiddenBody, isJsonType } from './admin-request.ts';
import { tooLarge } from './body.ts';
import { type CallResult, sendToWorker } from './worker-calls.ts';

/** The engine-management endpoints, as vLLM serves them. */
export const ENGINE_PATHS: ReadonlyArray<readonly ['GET' | 'POST', string]> = [
  ['POST', '/v1/load_lora_adapter'],
  ['POST', '/v1/unload_lora_adapter'],
  ['POST', '/sleep'],
  ['POST', '/wake_up'],
  ['GET', '/is_sleeping'],
  ['POST', '/reset_prefix_cache'],
  ['POST', '/reset_mm_cache'],
  ['POST', '/collective_rpc'],
  ['POST', '/start_profile'],
  ['POST', '/stop_profile'],
  ['POST', '/pause'],
  ['POST', '/resume'],
  ['POST', '/scale_elastic_ep'],
];

/** An engine's answer quoted in the summary is cut after this many characters. */
const MAX_QUOTED_CHARS = 4096;

/** The JSON body to forward (empty for none), or the answer refusing it. */
async function forwardedBody(c: Context, limit: number): Promise<Uint8Array | Response> {
  if (c.req.method === 'GET' || c.req.method === 'HEAD') return new Uint8Array(0);
  const declared = Number(c.req.header('content-length'));
  if (Number.isFinite(declared) && declared > limit) throw tooLarge(limit);
  const bytes = new Uint8Array(await c.req.arrayBuffer());
  if (bytes.byteLength > limit) throw tooLarge(limit);
  if (bytes.byteLength === 0) return bytes;
  if (!isJsonType(c.req.header('content-type'))) return forbiddenBody();
  try {
    JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    throw new RouterError('invalid_json', 'request body is not valid JSON');
  }
  return bytes;
}

/** An engine's answer: its JSON, or its text (cut). */
function quoted(result: CallResult): unknown {
  if (!result.body || result.body.byteLength === 0) return undefined;
  const text = new TextDecoder().decode(result.body);
  if (result.headers?.['content-type']?.includes('json')) {
    try {
      return JSON.parse(text);
    } catch {
      // Not JSON after all: quoted as text.
    }
  }
  return text.length > MAX_QUOTED_CHARS ? `${text.slice(0, MAX_QUOTED_CHARS)}...` : text;
}

async function fanOut(c: Context, deps: AdminDeps, path: string): Promise<Response> {
  const body = await forwardedBody(c, deps.config.server.maxPayloadSize);
  if (body instanceof Response) return body;
  const workers = (await deps.fleet.listWorkers()).filter((w) => !w.draining);
  const urls = [...new Set(workers.map((w) => w.url))];
  const target = path + new URL(c.req.url).search;
  const extras = {
    timeoutMs: deps.config.server.requestTimeoutSecs * 1000,
    ...(body.byteLength > 0 ? { body, headers: { 'content-type': 'application/json' } } : {}),
  };
  const results = await Promise.all(
    urls.map(async (url) => {
      const r = await sendToWorker(deps, url, target, c.req.method, extras);
      const answer = quoted(r);
      return {
        url,
        status: r.status ?? null,
        ok: r.ok,
        ...(answer === undefined ? {} : { body: answer }),
        ...(r.error ? { error: r.error } : {}),
      };
    }),
  );
  const ok = results.every((r) => r.ok);
  return c.json({ ok, results }, ok ? 200 : 502);
}

export const ENGINE_ROUTES: readonly AdminRoute[] = ENGINE_PATHS.map(([method, path]) => ({
  method,
  path,
  handle: (c: Context, deps: AdminDeps) => fanOut(c, deps, path),
}));
