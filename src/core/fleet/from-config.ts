/** Builds the in-memory fleet a configuration describes. */
import type { RouterConfig } from '../config/schema.ts';
import type { WorkerSpec } from '../contracts/fleet-api.ts';
import type { Clock, Random } from '../contracts/runtime.ts';
import type { MetricsRegistry } from '../observability/metrics.ts';
import { Fleet } from './fleet.ts';
import type { FleetSharing } from './fleet-sharing.ts';
import { ReplicaFleet } from './replica-fleet.ts';
import { signalSettings } from './worker-signals.ts';
import { expandDataParallel } from './workers.ts';

/**
 * Regular workers from --worker-urls / --static-backends, with --static-models aligned by position,
 * each expanded into its data-parallel ranks.
 */
export function workerSpecsFromConfig(config: RouterConfig): WorkerSpec[] {
  const { urls, models, dpSize, modelLabels } = config.workers;
  const { prefillLabels, decodeLabels } = config.pd;
  // production-stack: with PD on, a URL's label gives its role (--prefill/--decode-model-labels).
  const roleOf = (i: number): WorkerSpec['role'] => {
    const label = config.pd.enabled ? modelLabels[i] : undefined;
    if (label === undefined) return undefined;
    return prefillLabels.includes(label) ? 'prefill' : decodeLabels.includes(label) ? 'decode' : undefined;
  };
  const regular = urls.flatMap((url, i) => {
    const model = models.length === 1 ? models[0] : models[i];
    const role = roleOf(i);
    const spec: WorkerSpec = model === undefined ? { url } : { url, models: [model] };
    return expandDataParallel(role === undefined ? spec : { ...spec, role }, dpSize);
  });
  // --static-models with a single model applies to the prefill and decode workers too.
  const pdModels = models.length === 1 ? { models: [models[0] as string] } : {};
  const prefill = config.pd.prefill.flatMap(({ url, bootstrapPort }) =>
    expandDataParallel({ url, role: 'prefill', bootstrapPort, ...pdModels }, dpSize),
  );
  const decode = config.pd.decode.flatMap((url) =>
    expandDataParallel({ url, role: 'decode', ...pdModels }, dpSize),
  );
  return [...regular, ...prefill, ...decode];
}

export function createFleetFromConfig(
  config: RouterConfig,
  deps: {
    clock: Clock;
    random: Random;
    metrics: MetricsRegistry;
    onEvent?: (level: 'info' | 'warn', message: string, fields: Record<string, unknown>) => void;
    /** Replicas sharing a store: a ReplicaFleet that reports its own observations here. */
    sharing?: FleetSharing;
  },
): Fleet {
  const { circuitBreaker: cb, health } = config;
  const policy = config.policy;
  const Kind = deps.sharing ? ReplicaFleet : Fleet;
  return new Kind({
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
      ...(deps.sharing ? { sharing: deps.sharing } : {}),
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
    ...(deps.sharing ? { sharing: deps.sharing } : {}),
  });
}
