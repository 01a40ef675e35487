/** The fleet's own counters: breaker transitions and recorded outcomes per worker. */
import type { MetricsRegistry } from '../observability/metrics.ts';
import type { BreakerTransition } from '../resilience/circuit-breaker.ts';

export interface FleetMetrics {
  transition(worker: string, t: BreakerTransition): void;
  outcome(worker: string, outcome: string): void;
}

export function createFleetMetrics(metrics: MetricsRegistry | undefined): FleetMetrics {
  if (!metrics) return { transition: () => {}, outcome: () => {} };
  const transitions = metrics.counter(
    'vllm_router_cb_state_transitions_total',
    'Total number of circuit breaker state transitions by worker',
    ['worker', 'from', 'to'],
  );
  const outcomes = metrics.counter(
    'vllm_router_cb_outcomes_total',
    'Total number of circuit breaker outcomes by worker and outcome type',
    ['worker', 'outcome'],
  );
  return {
    transition: (worker, t) => transitions.labels(worker, t.from, t.to).inc(),
    outcome: (worker, outcome) => outcomes.labels(worker, outcome).inc(),
  };
}
