/**
 * Features whose flags parse but which this release does not implement. Running without them would
 * silently change what the user asked for (a fleet with no workers, no P/D split), so
 * the router refuses to start and says which flag it was.
 */

import { ConfigError } from './errors.ts';
import type { RouterConfig } from './schema.ts';

export function unsupportedFeatures(config: RouterConfig): { flag: string; what: string }[] {
  const out: { flag: string; what: string }[] = [];
  if (config.pd.enabled || config.pd.prefill.length > 0 || config.pd.decode.length > 0) {
    out.push({
      flag: '--vllm-pd-disaggregation / --prefill / --decode',
      what: 'prefill/decode disaggregation',
    });
  }
  if (config.pd.discoveryAddress !== undefined) {
    out.push({ flag: '--vllm-discovery-address', what: 'P2P-NCCL worker self-registration' });
  }
  if (config.discovery.mode === 'k8s') {
    out.push({ flag: '--service-discovery', what: 'Kubernetes service discovery' });
  }
  return out;
}

/** Throws a ConfigError (exit 2) naming the first unsupported feature the config asks for. */
export function assertSupported(config: RouterConfig): void {
  const [first, ...rest] = unsupportedFeatures(config);
  if (!first) return;
  const more = rest.length > 0 ? ` (also: ${rest.map((r) => r.flag).join(', ')})` : '';
  throw new ConfigError(
    `${first.flag}: ${first.what} is not available in this release; refusing to start rather than run without it${more}`,
    { flag: first.flag },
  );
}
