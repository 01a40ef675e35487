/** The router's own metric families (vllm-router names), created once per app. */
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
