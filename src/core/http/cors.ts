/**
 * The router's CORS policy, the only one a browser sees: engines' `Access-Control-*` headers are
 * removed from proxied answers (routing/headers.ts), and every OPTIONS request is answered here,
 * never forwarded to an engine.
 * - With --cors-allowed-origins: those origins get `Access-Control-Allow-Origin`; preflights allow
 *   the Authorization and Content-Type headers, and X-Request-Id is exposed.
 * - Without: a preflight gets a 204 without `Access-Control-Allow-Origin`, so the browser refuses.
 * A plain OPTIONS (no `Access-Control-Request-Method`) gets a 204 naming the methods in `Allow`.
 */
import type { MiddlewareHandler } from 'hono';
import { cors } from 'hono/cors';

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];
const ALLOW = [...METHODS, 'OPTIONS'].join(', ');

/** The router's own answer to an OPTIONS request. */
export function optionsResponse(): Response {
  return new Response(null, { status: 204, headers: { allow: ALLOW } });
}

export function routerCors(origins: readonly string[]): MiddlewareHandler {
  if (origins.length === 0) {
    return async (c, next) => {
      if (c.req.method === 'OPTIONS') return optionsResponse();
      await next();
    };
  }
  const policy = cors({
    origin: [...origins],
    allowMethods: METHODS,
    allowHeaders: ['Authorization', 'Content-Type'],
    exposeHeaders: ['X-Request-Id'],
  });
  return async (c, next) => {
    // hono's cors answers every OPTIONS itself (a 204); the router adds the Allow list.
    const answered = await policy(c, next);
    if (answered instanceof Response) answered.headers.set('allow', ALLOW);
    return answered;
  };
}
