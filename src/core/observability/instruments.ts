/**
 * The router's own metric families (vllm-router names), created once per app. `model` is bounded
 * (model-labels.ts): a model the fleet serves, `other`, or empty when the request named none.
 */
import type { MetricsRegistry } from './metrics.ts';

/** vLLM's time-to-first-token buckets (seconds): the engine's and the router's TTFT line up. */
export const TTFT_BUCKETS: readonly number[] = [
  0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640,
  2560,
];

/** vLLM's inter-token latency buckets, with finer ones below 10 ms (chunks of a fast decode). */
export const ITL_BUCKETS: readonly number[] = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20,
  40, 80,
];

export function createInstruments(metrics: MetricsRegistry) {
  return {
    requests: metrics.counter(
      'vllm_router_requests_total',
      'Total number of requests by route, method, status and model',
      ['route', 'method', 'status', 'model'],
    ),
    duration: metrics.histogram(
      'vllm_router_request_duration_seconds',
      'Request duration in seconds by route and model',
      ['route', 'model'],
    ),
    errors: metrics.counter(
      'vllm_router_request_errors_total',
      'Total number of router-generated errors by route, error type and model',
      ['route', 'error_type', 'model'],
    ),
    ttft: metrics.histogram(
      'vllm_router_time_to_first_token_seconds',
      'Streamed answers: time from the request to the first body chunk relayed, by model and worker',
      ['model', 'worker'],
      TTFT_BUCKETS,
    ),
    itl: metrics.histogram(
      'vllm_router_inter_token_latency_seconds',
      'Streamed answers: time between consecutive body chunks relayed, by model and worker',
      ['model', 'worker'],
      ITL_BUCKETS,
    ),
    headers: metrics.histogram(
      'vllm_router_time_to_response_headers_seconds',
      'Time from the request to the response headers sent to the client, by model and worker',
      ['model', 'worker'],
      TTFT_BUCKETS,
    ),
    promptTokens: metrics.counter(
      'vllm_router_prompt_tokens_total',
      'Prompt tokens the engines reported in `usage`, by model',
      ['model'],
    ),
    completionTokens: metrics.counter(
      'vllm_router_completion_tokens_total',
      'Completion tokens the engines reported in `usage`, by model',
      ['model'],
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
