/**
 * Policy metrics shared by every pool. A worker can belong to several pools (one per model it
 * serves, plus the role's wildcard pool), each with its own policy instance, so a per-worker gauge
 * is the sum over the pools: one collector per gauge and registry adds up every instance's share.
 */
import type { Counter, MetricsRegistry } from '../observability/metrics.ts';

/** Reports a policy instance's per-worker values; `add` may be called several times per worker. */
export type GaugeSource = (add: (worker: string, value: number) => void) => void;

interface Aggregate {
  sources: Set<GaugeSource>;
}

const aggregates = new WeakMap<MetricsRegistry, Map<string, Aggregate>>();

/** Adds `source` to the per-worker gauge `name` (created, with its collector, on first use). */
export function addGaugeSource(
  metrics: MetricsRegistry,
  name: string,
  help: string,
  source: GaugeSource,
): void {
  let byName = aggregates.get(metrics);
  if (!byName) {
    byName = new Map();
    aggregates.set(metrics, byName);
  }
  let aggregate = byName.get(name);
  if (!aggregate) {
    const sources = new Set<GaugeSource>();
    aggregate = { sources };
    byName.set(name, aggregate);
    const gauge = metrics.gauge(name, help, ['worker']);
    metrics.addCollector(() => {
      const totals = sum(sources);
      gauge.clear();
      for (const [worker, value] of totals) gauge.labels(worker).set(value);
    });
  }
  aggregate.sources.add(source);
}

function sum(sources: Iterable<GaugeSource>): Map<string, number> {
  const totals = new Map<string, number>();
  const add = (worker: string, value: number) => totals.set(worker, (totals.get(worker) ?? 0) + value);
  for (const s of sources) s(add);
  return totals;
}

/** The per-worker values of gauge `name` now (the live fleet page), or undefined when no policy reports it. */
export function readGaugeSources(metrics: MetricsRegistry, name: string): Map<string, number> | undefined {
  const aggregate = aggregates.get(metrics)?.get(name);
  return aggregate ? sum(aggregate.sources) : undefined;
}

export function decisionsCounter(metrics: MetricsRegistry): Counter {
  return metrics.counter(
    'vllm_router_policy_decisions_total',
    'Total routing decisions by policy and worker',
    ['policy', 'worker'],
  );
}

export function cacheCounters(metrics: MetricsRegistry) {
  return {
    hits: metrics.counter('vllm_router_cache_hits_total', 'cache_aware decisions routed by prefix match'),
    misses: metrics.counter(
      'vllm_router_cache_misses_total',
      'cache_aware decisions below the cache threshold (routed to the least-loaded worker)',
    ),
    balancing: metrics.counter(
      'vllm_router_load_balancing_events_total',
      'cache_aware decisions overridden by the load spill gate',
    ),
  };
}

export function sllRebalances(metrics: MetricsRegistry): Counter {
  return metrics.counter(
    'vllm_router_sll_rebalances_total',
    'sticky_least_loaded sessions moved to rebalance, by source and target worker',
    ['from', 'to'],
  );
}
