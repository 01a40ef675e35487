/** Bindings the workerd tests see: the Worker's (wrangler.toml plus the vitest config's ROUTER_CONFIG). */
import type { FleetEnv } from '../../../src/adapters/cloudflare/fleet-object.ts';

declare global {
  namespace Cloudflare {
    interface Env extends FleetEnv {}
  }
}
