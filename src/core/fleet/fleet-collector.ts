/** Per-worker gauges (processed, load, health, breaker state) read from the fleet at scrape time. */
import type { FleetApi } from '../contracts/fleet-api.ts';
import type { MetricsRegistry } from '../observability/metrics.ts';
import { breakerGaugeValue } from '../resilience/circuit-breaker.ts';

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
