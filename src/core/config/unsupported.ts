/**
 * Features whose flags parse but which this release does not implement. Running without them would
 * silently change what the user asked for (a fleet with no workers), so
 * the router refuses to start and says which flag it was.
 */

import { ConfigError } from './errors.ts';
import type { RouterConfig } from './schema.ts';

/** What the runtime offers beyond the core. */
export interface RuntimeFeatures {
  /** P2P-NCCL workers registering over ZMQ (a ZMQ socket: the Node and Deno adapters). */
  p2pRegistration?: boolean;
  /** Kubernetes service discovery (--service-discovery; the Node adapter). */
  kubernetesDiscovery?: boolean;
  /** Fleet state shared through Redis (--state-store; the Node and Deno adapters). */
  stateStore?: boolean;
}

export function unsupportedFeatures(
  config: RouterConfig,
  runtime: RuntimeFeatures = {},
): { flag: string; what: string }[] {
  const out: { flag: string; what: string }[] = [];
  if (config.pd.discoveryAddress !== undefined && runtime.p2pRegistration !== true) {
    out.push({
      flag: '--vllm-discovery-address',
      what: 'P2P-NCCL worker registration over ZMQ (available with the Node and Deno runtimes)',
    });
  }
  if (config.discovery.mode === 'k8s' && runtime.kubernetesDiscovery !== true) {
    out.push({
      flag: '--service-discovery',
      what: 'Kubernetes service discovery (available with the Node runtime)',
    });
  }
  if (config.stateStore.url !== undefined && runtime.stateStore !== true) {
    out.push({
      flag: '--state-store',
      what: 'fleet state shared through Redis (available with the Node and Deno runtimes; on Workers the Durable Object holds it)',
    });
  }
  return out;
}

/** Throws a ConfigError (exit 2) naming the first unsupported feature the config asks for. */
export function assertSupported(config: RouterConfig, runtime: RuntimeFeatures = {}): void {
  const [first, ...rest] = unsupportedFeatures(config, runtime);
  if (!first) return;
  const more = rest.length > 0 ? ` (also: ${rest.map((r) => r.flag).join(', ')})` : '';
  throw new ConfigError(
    `${first.flag}: ${first.what} is not available here; refusing to start rather than run without it${more}`,
    { flag: first.flag },
  );
}
