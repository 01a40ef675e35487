/** Path hygiene (placeholder: to be completed). */
import type { MiddlewareHandler } from 'hono';

export const pathHygiene: MiddlewareHandler = async (_c, next) => {
  await next();
};
