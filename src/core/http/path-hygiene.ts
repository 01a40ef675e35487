/**
 * Path hygiene, before routing: a request path with a dot segment (`/./`, `/../`, a trailing `/.` or
 * `/..`, raw or percent-encoded as `%2e`), an encoded slash or backslash (`%2f`, `%5c`), a raw
 * backslash, or NUL (raw or `%00`) is answered 400 and reaches no route and no engine (an encoded
 * slash is the one exception, inside the worker id of `/workers/{id}`). The router
 * and an engine could otherwise disagree on what the path means (`/v1/%2e%2e/flush_cache` is a
 * passthrough path to one and an admin path to the other).
 *
 * Checked on the request target as the runtime delivered it. The URL the app sees was parsed by
 * WHATWG URL rules, which resolve `..` and `%2e%2e` (Deno, Workers, `new Request`): such a request
 * arrives resolved, and an admin path it resolves to is guarded as any admin request. On Node,
 * @hono/node-server resolves it too, but keeps the request line's target in `c.env.incoming.url`:
 * that raw target is checked as well, so Node answers 400.
 */
import type { MiddlewareHandler } from 'hono';
import { errorResponse, RouterError } from '../contracts/errors.ts';

/** The path of a request target (origin form `/a?b`, or absolute form `http://h/a?b`). */
function pathOf(target: string): string {
  let start = 0;
  if (target.charCodeAt(0) !== 47 /* / */) {
    const authority = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i.exec(target);
    start = authority ? authority[0].length : 0;
  }
  let end = target.length;
  for (let i = start; i < end; i++) {
    const ch = target.charCodeAt(i);
    if (ch === 63 /* ? */ || ch === 35 /* # */) end = i;
  }
  return target.slice(start, end);
}

/**
 * The admin API's `/workers/{id}` takes the URL-encoded worker id (`http%3A%2F%2Fengine%3A8000`) as
 * its one segment: an encoded slash there is the id's own, and the router answers it itself (it
 * is never forwarded). Dot segments, backslashes and NUL are refused there too.
 */
const WORKER_ID_PATH = /^\/workers\/[^/]+\/?$/;

/** True when a raw (still percent-encoded) path has a dot segment, an encoded separator or NUL. */
export function isUnsafePath(path: string): boolean {
  // The common case (no escape, no backslash, no segment starting with a dot) costs a few scans.
  if (!path.includes('%') && !path.includes('\\') && !path.includes('/.') && !path.includes('\u0000')) {
    return false;
  }
  const p = path.toLowerCase();
  if (p.includes('\\') || p.includes('\u0000') || /%(5c|00)/.test(p)) return true;
  if (p.includes('%2f') && !WORKER_ID_PATH.test(path)) return true;
  return /(^|\/)\.\.?(\/|$)/.test(p.replace(/%2e/g, '.'));
}

/** The original request-line target, where the runtime keeps it (@hono/node-server). */
function rawTarget(env: unknown): string | undefined {
  const url = (env as { incoming?: { url?: unknown } } | undefined)?.incoming?.url;
  return typeof url === 'string' ? url : undefined;
}

/**
 * The 400 for a request whose path is unsafe, else undefined. Runs before routing (app.ts calls it
 * from the app's fetch, ahead of Hono's router, so the common request pays no middleware).
 */
export function unsafePathResponse(request: Request, env: unknown): Response | undefined {
  // The raw target when the runtime keeps it: the parsed URL was made from it (and may hide a
  // resolved `%2e%2e`).
  if (!isUnsafePath(pathOf(rawTarget(env) ?? request.url))) return undefined;
  return errorResponse(
    new RouterError(
      'invalid_request',
      'invalid request path: dot segments, encoded slashes or backslashes and NUL are refused',
    ),
  );
}

/** The same check as a Hono middleware (for apps other than the router's, e.g. tests). */
export const pathHygiene: MiddlewareHandler = async (c, next) => {
  const refused = unsafePathResponse(c.req.raw, c.env);
  if (refused) return refused;
  await next();
};
