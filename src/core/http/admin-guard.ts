/**
 * The admin guard (placeholder: to be completed). Decides whether an admin request may run.
 */
import type { Context } from 'hono';
import type { RouterConfig } from '../config/schema.ts';
import type { AdminGuard } from './admin.ts';
import type { ClientAuth } from './client-auth.ts';

export interface AdminGuardOptions {
  /** The peer's IP address, where the runtime tells it (Node, Deno); undefined on Workers. */
  peerAddress?: (c: Context) => string | undefined;
  /** Without --admin-api-key: loopback peers only (Node, Deno) or nobody (Workers). */
  withoutKey: 'loopback' | 'off';
  /** Client auth, when --api-key-validation-urls is set. */
  clientAuth?: ClientAuth;
}

export function createAdminGuard(_config: RouterConfig, _options: AdminGuardOptions): AdminGuard {
  return () => undefined;
}
