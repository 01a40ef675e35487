/**
 * What every admin handler shares: its dependencies, the route shape, the error answers, and the one
 * body parser of the admin API (POST and PUT), validated by the wire schemas (admin-views.ts) whose
 * ranges come from the config schema.
 */
import type { Context } from 'hono';
import type { z } from 'zod';
import type { RouterConfig } from '../config/schema.ts';
import { errorResponse, RouterError } from '../contracts/errors.ts';
import type { FleetApi } from '../contracts/fleet-api.ts';
import type { Clock } from '../contracts/runtime.ts';
import type { Upstream } from '../contracts/upstream.ts';
import { retrySettings } from '../resilience/backoff.ts';
import { describeIssues } from './admin-views.ts';

export interface AdminDeps {
  fleet: FleetApi;
  upstream: Upstream;
  clock: Clock;
  config: RouterConfig;
  /** Probes new workers at once (they take traffic after their first good probe). */
  probe(urls: string[]): Promise<void>;
}

export interface AdminRoute {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  /**
   * Who may call it: `admin` routes need --admin-api-key (or a loopback peer without it); `client`
   * routes (/finish_session, /health_generate) are for clients, behind client auth like inference.
   */
  access?: 'client';
  handle(c: Context, deps: AdminDeps): Response | Promise<Response>;
}

export const badRequest = (message: string, param?: string) =>
  errorResponse(new RouterError('invalid_request', message, param === undefined ? undefined : { param }));

/** The media type of a Content-Type value, lowercased, without parameters. */
export const mediaTypeOf = (contentType: string) => (contentType.split(';')[0] ?? '').trim().toLowerCase();

/** application/json or a `+json` type (application/merge-patch+json), parameters aside. */
export function isJsonType(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  const media = mediaTypeOf(contentType);
  return media === 'application/json' || (media.startsWith('application/') && media.endsWith('+json'));
}

/** The 403 for a body that is not announced as JSON (what a cross-site form could send). */
export const forbiddenBody = () =>
  errorResponse(
    new RouterError('forbidden', 'admin change refused: a request body needs Content-Type: application/json'),
  );

export const unknownWorker = (id: string) =>
  errorResponse(new RouterError('worker_not_found', `no worker with id ${id}`));

/** Checks retry overrides against the global settings (initial ≤ max and the other rules). */
function retryOverrideProblem(
  config: RouterConfig,
  retry: Partial<RouterConfig['retry']> | null | undefined,
): string | undefined {
  if (!retry) return undefined;
  try {
    retrySettings({ ...config.retry, ...retry });
    return undefined;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

/**
 * The one body parser of the admin API (POST and PUT): JSON (a body of another or no content type
 * is refused, as the admin guard does when the type is announced), validated by `schema`, mapped by
 * `toValue`, and a retry override checked against the global retry settings. Either the value or
 * the 400 to answer with.
 */
export async function readAdminBody<S extends z.ZodType, T extends { retry?: unknown }>(
  c: Context,
  deps: AdminDeps,
  schema: S,
  toValue: (body: z.output<S>) => T,
): Promise<{ ok: true; value: T } | { ok: false; response: Response }> {
  let raw: unknown;
  const text = await c.req.text();
  if (text !== '' && !isJsonType(c.req.header('content-type'))) {
    return { ok: false, response: forbiddenBody() };
  }
  try {
    raw = JSON.parse(text);
  } catch {
    throw new RouterError('invalid_json', 'request body is not valid JSON');
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const field = parsed.error.issues[0]?.path.join('.');
    return { ok: false, response: badRequest(describeIssues(parsed.error), field || undefined) };
  }
  const value = toValue(parsed.data);
  const problem = retryOverrideProblem(deps.config, value.retry as Partial<RouterConfig['retry']> | null);
  if (problem !== undefined) return { ok: false, response: badRequest(problem, 'retry') };
  return { ok: true, value };
}
