/** Builds the in-memory fleet a configuration describes. */
import type { RouterConfig } from '../config/schema.ts';
import type { Clock, Random } from '../deps.ts';
import type { MetricsRegistry } from '../observability/metrics.ts';
import { Fleet } from './fleet.ts';
import type { WorkerSpec } from './fleet-api.ts';

/** Regular workers from --worker-urls / --static-backends, with --static-models aligned by position. */
export function workerSpecsFromConfig(config: RouterConfig): WorkerSpec[] {
  const { urls, models } = config.workers;
  return urls.map((url, i) => {
    const model = models.length === 1 ? models[0] : models[i];
    return model === undefined ? { url } : { url, models: [model] };
  });
}

export function createFleetFromConfig(
  config: RouterConfig,
  deps: { clock: Clock; random: Random; metrics: MetricsRegistry },
): Fleet {
  const policy = config.policy;
  return new Fleet({
    policies: {
      regular: policy.name,
      prefill: policy.prefill ?? policy.name,
      decode: policy.decode ?? policy.name,
    },
    policyContext: {
      clock: deps.clock,
      random: deps.random,
      settings: config.policy,
      sll: config.sll,
      metrics: deps.metrics,
    },
    clock: deps.clock,
    leaseTtlMs: config.server.requestTimeoutSecs * 1000,
    workers: workerSpecsFromConfig(config),
  });
}
