/**
 * Client authentication (placeholder: to be completed): `--api-key-validation-urls`.
 */
import type { Context, MiddlewareHandler } from 'hono';
import type { RouterConfig } from '../config/schema.ts';
import type { RouterDeps } from '../routing/context.ts';

export interface ClientAuth {
  /** undefined when the request carries a valid client token, else the 401/503 to answer with. */
  check(c: Context): Promise<Response | undefined>;
  /** Checks every route but the open ones (`isOpen(path)`), before any handler runs. */
  middleware(isOpen: (path: string) => boolean): MiddlewareHandler;
}

/** undefined when client auth is off (no validation URLs). */
export function createClientAuth(config: RouterConfig, _deps: RouterDeps): ClientAuth | undefined {
  if (config.auth.apiKeyValidationUrls.length === 0) return undefined;
  return undefined;
}
