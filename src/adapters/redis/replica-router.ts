/**
 * The router a Node or Deno process runs: in memory as before, or, with `--state-store`, a replica
 * sharing its fleet with the others through Redis (core: router.ts `createReplicaRouter`). A store
 * that does not answer at startup does not stop the router: it routes on local state, warns, and
 * joins the others as soon as the store answers.
 */
import type { RouterConfig } from '../../core/config/schema.ts';
import type { Fleet } from '../../core/fleet/fleet.ts';
import type { SharedFleet } from '../../core/fleet/shared-fleet.ts';
import { createReplicaRouter, createRouter, type Router, type RouterHost } from '../../core/router.ts';
import { createRedisStore } from './redis-store.ts';

export interface HostRouter {
  router: Router<Fleet> | Router<SharedFleet>;
  /** The fleet this process holds (a replica's local copy). */
  fleet: Fleet;
  /** Stops sharing and closes the store connection (nothing without a store). */
  close(): Promise<void>;
}

export async function openHostRouter(config: RouterConfig, host: RouterHost): Promise<HostRouter> {
  const { url, password, timeoutMs, keyPrefix } = config.stateStore;
  if (url === undefined) {
    const router = createRouter(config, host);
    return { router, fleet: router.fleet, close: async () => {} };
  }
  // Outages are logged once each by the router's link to the store (store-link.ts), not here too.
  const store = await createRedisStore({
    url,
    ...(password === undefined ? {} : { password }),
    keyPrefix,
    commandTimeoutMs: timeoutMs,
  });
  const router = createReplicaRouter(config, host, store);
  return { router, fleet: router.fleet.local, close: () => router.close() };
}
