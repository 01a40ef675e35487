/** Builds the in-memory fleet a configuration describes. */
import type { RouterConfig } from '../config/schema.ts';
import type { WorkerSpec } from '../contracts/fleet-api.ts';
import type { Clock, Random } from '../contracts/runtime.ts';
import type { MetricsRegistry } from '../observability/metrics.ts';
import { Fleet } from './fleet.ts';
import { signalSettings } from './worker-signals.ts';
import { expandDataParallel } from './workers.ts';

/**
 * Regular workers from --worker-urls / --static-backends, with --static-models aligned by position,
 * each expanded into its data-parallel ranks.
 */
export function workerSpecsFromConfig(config: RouterConfig): WorkerSpec[] {
  const { urls, models, dpSize } = config.workers;
  return urls.flatMap((url, i) => {
    const model = models.length === 1 ? models[0] : models[i];
    return expandDataParallel(model === undefined ? { url } : { url, models: [model] }, dpSize);
  });
}

export function createFleetFromConfig(
  config: RouterConfig,
  deps: {
    clock: Clock;
    random: Random;
    metrics: MetricsRegistry;
    onEvent?: (level: 'info' | 'warn', message: string, fields: Record<string, unknown>) => void;
  },
): Fleet {
  const { circuitBreaker: cb, health } = config;
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
    breaker: {
      failureThreshold: cb.failureThreshold,
      successThreshold: cb.successThreshold,
      timeoutDurationSecs: cb.timeoutDurationSecs,
      windowDurationSecs: cb.windowDurationSecs,
      disabled: cb.disabled,
    },
    signals: signalSettings(config),
    health: {
      probing: !health.disabled,
      failureThreshold: health.failureThreshold,
      successThreshold: health.successThreshold,
    },
    metrics: deps.metrics,
    ...(deps.onEvent ? { onEvent: deps.onEvent } : {}),
  });
}
