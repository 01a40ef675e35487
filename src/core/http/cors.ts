/** The router's CORS policy (placeholder: to be completed). */
import type { MiddlewareHandler } from 'hono';
import { cors } from 'hono/cors';

export function routerCors(origins: readonly string[]): MiddlewareHandler {
  if (origins.length > 0) return cors({ origin: [...origins] });
  return async (_c, next) => {
    await next();
  };
}
