/** Prefill/decode metric families (`vllm_router_pd_*`), created once per app when PD is on. */
import type { MetricsRegistry } from '../observability/metrics.ts';

export function createPdInstruments(metrics: MetricsRegistry) {
  return {
    requests: metrics.counter(
      'vllm_router_pd_requests_total',
      'Requests split into a prefill and a decode leg, by KV connector',
      ['connector'],
    ),
    prefillDuration: metrics.histogram(
      'vllm_router_pd_prefill_duration_seconds',
      'Prefill leg duration in seconds, from its first attempt to its answer read',
    ),
    decodeDuration: metrics.histogram(
      'vllm_router_pd_decode_duration_seconds',
      'Decode leg duration in seconds, from its first attempt to the end of the answer',
    ),
    kvParamsMissing: metrics.counter(
      'vllm_router_pd_kv_transfer_params_missing_total',
      'Prefill answers without kv_transfer_params (the decode engine prefilled locally)',
    ),
    legErrors: metrics.counter(
      'vllm_router_pd_leg_errors_total',
      'Prefill and decode legs that ended without an answer to use, by leg and status or error code',
      ['leg', 'reason'],
    ),
    freshPrefills: metrics.counter(
      'vllm_router_pd_fresh_prefills_total',
      'Prefills run again for a request, by reason (KV hold time passed, decode moved to another worker)',
      ['reason'],
    ),
  };
}

export type PdInstruments = ReturnType<typeof createPdInstruments>;
