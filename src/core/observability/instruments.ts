/** The router's own metric families (vllm-router names), created once per app. */
import type { FleetApi } from '../fleet/fleet-api.ts';
import { breakerGaugeValue } from '../resilience/circuit-breaker.ts';
import type { MetricsRegistry } from './metrics.ts';

export function createInstruments(metrics: MetricsRegistry) {
  return {
    requests: metrics.counter(
      'vllm_router_requests_total',
      'Total number of requests by route, method and status',
      ['route', 'method', 'status'],
    ),
    duration: metrics.histogram(
      'vllm_router_request_duration_seconds',
      'Request duration in seconds by route',
      ['route'],
    ),
    errors: metrics.counter(
      'vllm_router_request_errors_total',
      'Total number of router-generated errors by route and error type',
      ['route', 'error_type'],
    ),
    retries: metrics.counter('vllm_router_retries_total', 'Total number of request retries by route', [
      'route',
    ]),
    retriesExhausted: metrics.counter(
      'vllm_router_retries_exhausted_total',
      'Total number of requests that exhausted retries by route',
      ['route'],
    ),
    budgetExhausted: metrics.counter(
      'vllm_router_retries_budget_exhausted_total',
      'Retries not made because the retry budget was spent',
    ),
    backoff: metrics.histogram(
      'vllm_router_retry_backoff_duration_seconds',
      'Backoff duration in seconds by attempt index',
      ['attempt'],
    ),
    retryForfeited: metrics.counter(
      'vllm_router_retry_forfeited_total',
      'Requests sent with a single attempt because their body was too large to buffer',
    ),
    staleResends: metrics.counter(
      'vllm_router_stale_connection_resends_total',
      'Sends repeated once at once because the pooled connection was already closed',
    ),
    streamErrors: metrics.counter(
      'vllm_router_stream_errors_total',
      'Upstream streams that broke after the response had started, by worker',
      ['worker'],
    ),
  };
}

export type Instruments = ReturnType<typeof createInstruments>;

/** Per-worker gauges mirrored from the fleet at scrape time. */
export function registerFleetCollector(metrics: MetricsRegistry, fleet: FleetApi): void {
  const processed = metrics.counter(
    'vllm_router_processed_requests_total',
    'Total requests processed by each worker',
    ['worker'],
  );
  const running = metrics.gauge('vllm_router_running_requests', 'Requests in flight on each worker', [
    'worker',
  ]);
  const load = metrics.gauge('vllm_router_worker_load', 'Current load on each worker', ['worker']);
  const health = metrics.gauge('vllm_router_worker_health', 'Worker health status (1=healthy, 0=unhealthy)', [
    'worker',
  ]);
  const active = metrics.gauge('vllm_router_active_workers', 'Number of currently active workers');
  const circuit = metrics.gauge(
    'vllm_router_cb_state',
    'Circuit breaker state per worker (0=closed, 1=open, 2=half_open)',
    ['worker'],
  );
  metrics.addCollector(async () => {
    const workers = await fleet.listWorkers();
    for (const m of [processed, running, load, health, circuit]) m.clear();
    let healthy = 0;
    for (const w of workers) {
      processed.labels(w.id).value = w.processed;
      running.labels(w.id).set(w.load);
      load.labels(w.id).set(w.load);
      health.labels(w.id).set(w.healthy ? 1 : 0);
      circuit.labels(w.id).set(breakerGaugeValue(w.circuit));
      if (w.healthy && !w.draining) healthy++;
    }
    active.set(healthy);
  });
}
